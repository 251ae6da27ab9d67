// The jobs a flow run travels in, on the flows queue: the start job carries the whole initial ledger (its publish
// is the commit point of a start); a wake-up names the run only (resume, a timer, a response, a child's end).
import { derivedUuid } from '../channel/ids';

export const DEFAULT_FLOWS_QUEUE = 'flows';

export type FlowJob = { kind: 'start'; flowId: string; stateJson: string } | { kind: 'wake'; flowId: string; reason: string };

export function readFlowJob(payload: unknown): FlowJob | null {
  const p = payload as Partial<{ kind: string; flowId: string; stateJson: string; reason: string }> | null;
  if (!p || typeof p.flowId !== 'string') return null;
  if (p.kind === 'start' && typeof p.stateJson === 'string') return { kind: 'start', flowId: p.flowId, stateJson: p.stateJson };
  if (p.kind === 'wake') return { kind: 'wake', flowId: p.flowId, reason: typeof p.reason === 'string' ? p.reason : 'wake' };
  return null;
}

/** One start job per run id while it exists (a repeated start publishes nothing new). */
export const startJobId = (flowId: string) => derivedUuid(`flow-start:${flowId}`);

/**
 * A wake-up's id comes from what caused it, so a repeated cause (a redelivered hook, a re-run park at the same
 * revision) enqueues nothing twice while the first job exists.
 */
export const wakeJobId = (flowId: string, cause: string) => derivedUuid(`flow-wake:${flowId}:${cause}`);

/** Where the flows layer's jobs go (the engine: the transport's publisher on the flows queue). */
export interface FlowJobQueue {
  /** delayMs <= 0: claimable at once; else available_at = database clock + delayMs. */
  publish(job: { id: string; job: FlowJob; delayMs: number }): Promise<void>;
  /** Deletes a waiting (not leased) job; absent or leased jobs are left alone. Best effort: a stale wake-up is a no-op. */
  cancel(id: string): Promise<void>;
  /**
   * For a store that carries jobs: the job as the row a flow-state write inserts (the start job rides on the run's
   * create), and the announcement of rows that write committed (wakes this process's drains, counts them).
   */
  carried?: { row(job: { id: string; job: FlowJob; delayMs: number }): CarriedJob; announce(jobs: readonly CarriedJob[]): void };
}

/** A run's timer wake-up for one instant: parks that wait for the same instant share it. */
export const timerWakeJobId = (flowId: string, wakeAt: number) => wakeJobId(flowId, `timer-at:${wakeAt}`);

/** A job published by flow code (`ctx.publish`), e.g. the request an awaited step triggers. */
export interface FlowPublishInput {
  payload: unknown;
  id?: string;
  correlationId?: string;
  headers?: Record<string, string>;
  delaySeconds?: number;
  /** As the engine's publish takes them (-32768..32767, higher first). */
  priority?: number;
  /** As the engine's publish takes it: a request with one is published on its own, after the breadcrumb. */
  orderingKey?: string;
}

export type FlowPublisher = (queue: string, message: FlowPublishInput) => Promise<{ id: string }>;

/**
 * A job a flow-state write inserts in its own statement (stores whose `carriesJobs` is set: PostgreSQL and PGlite,
 * where the transport table sits beside the flow tables): a plain row, no ordering key and no dedup key.
 */
export interface CarriedJob {
  id: string;
  queue: string;
  payloadJson: string;
  headersJson: string;
  delayMs: number;
  priority: number;
  /**
   * A drain of this process has room for the queue (WakeSignal.claimsPromptly): the in-process wake brings it the
   * row at once, so the write sends no NOTIFY for it (a NOTIFY takes PostgreSQL's notify lock until its commit is
   * flushed, which serialises the commits of every notifying transaction).
   */
  quiet?: boolean;
  /**
   * Set by the store once the write carrying the job ran: true when the job's row was inserted, false when the
   * write did not take or a row with this id was already there (left alone, as a publish leaves it).
   */
  inserted?: boolean;
}

/** Marks each carried job inserted or not (CarriedJob.inserted), from the ids the carrying write inserted. */
export function markCarried(jobs: readonly CarriedJob[], insertedIds: readonly string[] | null | undefined): void {
  const inserted = new Set((insertedIds ?? []).map((id) => id.toLowerCase()));
  for (const j of jobs) j.inserted = inserted.has(j.id.toLowerCase());
}

/**
 * ctx.awaitResponse's request published with the wait's breadcrumb in one statement: `write` is the breadcrumb's
 * write carrying the job. Resolves null when this message cannot be carried (an ordering or dedup key): the caller
 * then writes the breadcrumb and publishes on its own.
 */
export type FlowCarriedPublisher = (queue: string, message: FlowPublishInput, write: (jobs: readonly CarriedJob[]) => Promise<void>) => Promise<{ id: string } | null>;
