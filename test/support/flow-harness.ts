import { createFlows, type Flows, type FlowsDeps } from '../../shared/flows/flows';
import type { CarriedJob, FlowJob } from '../../shared/flows/jobs';
import { FlowRegistry } from '../../shared/flows/registry';
import type { FlowResponseWatch } from '../../shared/flows/responses';
import { silentLogger } from '../../shared/log';
import { MemoryFlowStore } from './memory-flow-store';
import { settle, VirtualClock } from './virtual-clock';

export interface QueuedJob {
  id: string;
  job: FlowJob;
  availableAt: number;
  attempts: number;
  running: boolean;
}

export interface Published {
  queue: string;
  payload: unknown;
  correlationId?: string;
}

/**
 * The flows layer on a virtual clock with in-memory ports: a flows queue with the transport's semantics that
 * matter here (insert-if-absent ids while a job exists, available_at, ack after the handler, redelivery with a
 * backoff, dead letter after maxAttempts), a response channel whose routing calls the recovery target directly,
 * and a recorder of the jobs flow code publishes.
 */
export class FlowHarness {
  readonly clock = new VirtualClock();
  readonly store = new MemoryFlowStore(this.clock);
  readonly registry = new FlowRegistry();
  readonly jobs = new Map<string, QueuedJob>();
  readonly deadLetters: Array<{ job: QueuedJob; error: unknown }> = [];
  readonly published: Published[] = [];
  readonly watches = new Map<string, { watch: FlowResponseWatch; expiresAt: number }>();
  /** Every job handled, in order (id, kind, flow id, outcome). */
  readonly handled: Array<{ id: string; kind: string; flowId: string; outcome: 'acked' | 'failed' }> = [];
  readonly flows: Flows;
  maxAttempts = 5;
  redeliveryDelayMs = 1000;
  /** Faults of the next flows-queue publishes: 'before' fails without inserting, 'after' inserts and then fails. */
  publishFaults: Array<'before' | 'after'> = [];
  /** Called for each job flow code publishes (an approver, a worker). */
  onPublish?: (p: Published) => void | Promise<void>;
  private readonly inflight = new Set<Promise<void>>();

  /**
   * `carryJobs`: the store carries jobs (as PostgreSQL's does): the start job rides on the create and an awaited
   * step's request on its breadcrumb's write; `'decline'` has the publisher decline to carry every request (as the
   * engine does for an ordering or dedup key), so the request is published on its own after the breadcrumb.
   */
  constructor(options: FlowsDeps['options'] = {}, harness: { carryJobs?: true | 'decline' } = {}) {
    if (harness.carryJobs) {
      this.store.carriesJobs = true;
      this.store.onCarried = (carried) => {
        for (const c of carried) {
          if (c.queue === 'flows') {
            c.inserted = !this.jobs.has(c.id);
            if (c.inserted) this.jobs.set(c.id, { id: c.id, job: JSON.parse(c.payloadJson) as FlowJob, availableAt: this.clock.now() + Math.max(0, c.delayMs), attempts: 0, running: false });
          } else {
            c.inserted = true;
            this.carried.push(c);
          }
        }
      };
    }
    this.flows = createFlows({
      store: this.store,
      registry: this.registry,
      clock: this.clock,
      logger: silentLogger,
      options,
      jobs: {
        publish: async ({ id, job, delayMs }) => {
          const fault = this.publishFaults.shift();
          if (fault === 'before') throw new Error('publish failed (injected)');
          if (!this.jobs.has(id)) this.jobs.set(id, { id, job, availableAt: this.clock.now() + Math.max(0, delayMs), attempts: 0, running: false });
          if (fault === 'after') throw new Error('publish answer lost (injected)');
        },
        cancel: async (id) => {
          const j = this.jobs.get(id);
          if (j && !j.running) this.jobs.delete(id);
        },
        ...(harness.carryJobs
          ? { carried: { row: ({ id, job, delayMs }) => ({ id, queue: 'flows', payloadJson: JSON.stringify(job), headersJson: '{}', delayMs, priority: 0 }), announce: () => undefined } }
          : {}),
      },
      responses: {
        watch: async (correlationId, watch, ttlMs) => {
          this.watches.set(correlationId, { watch, expiresAt: this.clock.now() + ttlMs });
        },
      },
      publish: async (queue, message) => {
        const p = { queue, payload: message.payload, ...(message.correlationId !== undefined ? { correlationId: message.correlationId } : {}) };
        this.published.push(p);
        await this.onPublish?.(p);
        return { id: message.id ?? `job-${this.published.length}` };
      },
      ...(harness.carryJobs
        ? {
            publishCarried: async (queue, message, write) => {
              if (harness.carryJobs === 'decline') return null;
              const id = message.id ?? `job-${this.published.length + 1}`;
              const headers = message.correlationId !== undefined ? { 'correlation-id': message.correlationId } : {};
              await write([{ id, queue, payloadJson: JSON.stringify(message.payload), headersJson: JSON.stringify(headers), delayMs: 0, priority: 0 }]);
              const p = { queue, payload: message.payload, ...(message.correlationId !== undefined ? { correlationId: message.correlationId } : {}) };
              this.published.push(p);
              await this.onPublish?.(p);
              return { id };
            },
          }
        : {}),
    });
  }

  /** The non-flows jobs carried by writes that took (carryJobs), in order. */
  readonly carried: CarriedJob[] = [];

  /** A response stored while no execution listens: the channel routes it to the flow target. */
  async respond(correlationId: string, payload: unknown, options: { final?: boolean; error?: string; id?: string } = {}) {
    const w = this.watches.get(correlationId);
    if (!w || w.expiresAt <= this.clock.now()) return 'no-registration' as const;
    return this.flows.recoverResponse(w.watch, {
      id: options.id ?? `resp-${Math.random().toString(36).slice(2)}`,
      correlationId,
      payloadJson: JSON.stringify(payload),
      final: options.final ?? true,
      ...(options.error !== undefined ? { error: options.error } : {}),
    });
  }

  /** Handles one queued job now, whatever else runs (a second worker on the same queue). */
  async runNow(job: QueuedJob): Promise<'acked' | 'failed'> {
    job.running = true;
    job.attempts++;
    try {
      await this.flows.handleJob({ id: job.id, payload: job.job });
      this.jobs.delete(job.id);
      this.handled.push({ id: job.id, kind: job.job.kind, flowId: job.job.flowId, outcome: 'acked' });
      return 'acked';
    } catch {
      job.running = false;
      job.availableAt = this.clock.now() + this.redeliveryDelayMs;
      this.handled.push({ id: job.id, kind: job.job.kind, flowId: job.job.flowId, outcome: 'failed' });
      return 'failed';
    }
  }

  dueJobs(): QueuedJob[] {
    return [...this.jobs.values()].filter((j) => !j.running && j.availableAt <= this.clock.now()).sort((a, b) => a.availableAt - b.availableAt);
  }

  /** Starts every due job (each at most once at a time), as a drain with spare concurrency would. */
  private startDue(): void {
    for (const j of this.dueJobs()) {
      j.running = true;
      j.attempts++;
      const p = this.flows
        .handleJob({ id: j.id, payload: j.job })
        .then(
          () => {
            this.jobs.delete(j.id);
            this.handled.push({ id: j.id, kind: j.job.kind, flowId: j.job.flowId, outcome: 'acked' });
          },
          (error: unknown) => {
            this.handled.push({ id: j.id, kind: j.job.kind, flowId: j.job.flowId, outcome: 'failed' });
            j.running = false;
            if (j.attempts >= this.maxAttempts) {
              this.jobs.delete(j.id);
              this.deadLetters.push({ job: j, error });
            } else j.availableAt = this.clock.now() + this.redeliveryDelayMs;
          },
        )
        .finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
  }

  /**
   * Runs due jobs and moves the clock to the next event (a sleeper inside a running job, or the next job's
   * available_at) until nothing is running and no job is due within `forMs` from now.
   */
  async run(forMs = 0): Promise<void> {
    const limit = this.clock.now() + forMs;
    for (let guard = 0; guard < 100_000; guard++) {
      this.startDue();
      await settle();
      if (this.dueJobs().length > 0) continue;
      const nextJob = Math.min(...[...this.jobs.values()].filter((j) => !j.running).map((j) => j.availableAt));
      if (this.inflight.size > 0) {
        const next = Math.min(this.clock.nextWakeAt() ?? Infinity, nextJob);
        if (next === Infinity) throw new Error('a job waits for something no clock moves (stuck)');
        await this.clock.advance(Math.max(0, next - this.clock.now()));
        continue;
      }
      if (!(nextJob <= limit)) break;
      await this.clock.advance(Math.max(0, nextJob - this.clock.now()));
    }
    if (forMs > 0 && this.clock.now() < limit && this.inflight.size === 0) await this.clock.advance(limit - this.clock.now());
  }

  async state(flowId: string) {
    return (await this.flows.get(flowId))!;
  }

  jobsOf(flowId: string): QueuedJob[] {
    return [...this.jobs.values()].filter((j) => j.job.flowId === flowId);
  }
}
