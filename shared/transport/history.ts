// Job lookup and history (issue 16 §2): what the store answers about one job id, and the search over the history
// table. A completed job is deleted by its ack unless its queue keeps history (policy.historyRetentionMs > 0):
// then the ack moves the row into the history table in the same statement, and the prune timer removes rows
// older than the queue's retention in bounded batches.

/**
 * A job's state. `delayed`, `ready`, `leased` are rows of the queue table; `dead-lettered` (and `expired`, a dead
 * letter whose reason is `expired`) rows of the dead-letter queue; `completed` rows of the history table. A job
 * cancelled while waiting or completed on a queue without history leaves no row (the lookup answers 404).
 */
export type JobState = 'delayed' | 'ready' | 'leased' | 'completed' | 'dead-lettered' | 'expired';

export const JOB_STATES: readonly JobState[] = ['delayed', 'ready', 'leased', 'completed', 'dead-lettered', 'expired'];

/** What the history table holds a row for (the search's state filter). */
export const HISTORY_STATES = ['completed'] as const;
export type HistoryState = (typeof HISTORY_STATES)[number];

export interface JobRecord {
  id: string;
  state: JobState;
  /** The queue it was published to (a dead letter's source queue). */
  queue: string;
  /** Deliveries so far (a waiting job that never ran: 0); null for a dead letter moved without them. */
  attempts: number | null;
  correlationId: string | null;
  createdAt: Date;
  /** When it became (or becomes) claimable; null for a dead letter. */
  availableAt: Date | null;
  /** When its ack moved it to history; null unless completed. */
  completedAt: Date | null;
  /** The dead-letter reason; null where none is known (a retried delivery's error is not stored). */
  lastError: string | null;
  /** The job's priority (higher first); absent for a job completed before history kept it (schema version 19 / PostgreSQL 17). */
  priority?: number;
  /** Its ordering key, when it was published with one (history keeps it from schema version 19 / PostgreSQL 17). */
  orderingKey?: string;
}

/** A row the store read for one id, before the dead-letter queue and the clock decide its state. */
export interface StoredJobRow {
  source: 'queue' | 'history';
  id: string;
  queue: string;
  attempts: number;
  headers: Record<string, string>;
  createdAt: Date;
  availableAt: Date;
  completedAt: Date | null;
  /** locked_until > database clock. */
  leased: boolean;
  /** available_at > database clock. */
  delayed: boolean;
  deadLetterReason: string | null;
  /** The row's priority column (NULL in history rows moved before it was kept: absent). */
  priority?: number;
  orderingKey?: string | null;
}

export interface HistoryCursor {
  /** completed_at as the database wrote it (ISO text at the database's precision, UTC). */
  completedAt: string;
  id: string;
}

export interface HistoryQuery {
  /** At least one of queue and correlationId: each is the leading key of an index. */
  queue?: string;
  correlationId?: string;
  state?: HistoryState;
  /** completed_at >= since */
  since?: Date;
  /** completed_at < until */
  until?: Date;
  /** Rows after this one in the search order (newest completed first). */
  after?: HistoryCursor;
  top: number;
}

export interface HistoryRow extends Omit<JobRecord, 'completedAt'> {
  completedAt: Date;
  /** The row's place in the search order, for the next page's cursor. */
  key: HistoryCursor;
}

export interface HistoryPage {
  items: HistoryRow[];
  /** Present when a page came back full: pass it to get the next page. */
  next?: HistoryCursor;
}

/** Reads a stored row as a job record: the dead-letter queue's rows are dead letters of their source queue. */
export function jobRecord(row: StoredJobRow, deadLetterQueue: string, sourceHeader: string, correlationHeader: string): JobRecord {
  const base = {
    id: row.id,
    correlationId: row.headers[correlationHeader] ?? null,
    createdAt: row.createdAt,
    ...(row.orderingKey != null ? { orderingKey: row.orderingKey } : {}),
  };
  if (row.source === 'history') {
    const priority = row.priority !== undefined ? { priority: row.priority } : {};
    return { ...base, state: 'completed', queue: row.queue, attempts: row.attempts, availableAt: row.availableAt, completedAt: row.completedAt, lastError: null, ...priority };
  }
  return { ...liveRecord(row, base, deadLetterQueue, sourceHeader), ...(row.priority !== undefined ? { priority: row.priority } : {}) };
}

function liveRecord(row: StoredJobRow, base: Pick<JobRecord, 'id' | 'correlationId' | 'createdAt'>, deadLetterQueue: string, sourceHeader: string): JobRecord {
  if (row.queue === deadLetterQueue) {
    return {
      ...base,
      state: row.deadLetterReason === 'expired' ? 'expired' : 'dead-lettered',
      queue: row.headers[sourceHeader] ?? row.queue,
      attempts: row.attempts > 0 ? row.attempts : null,
      availableAt: null,
      completedAt: null,
      lastError: row.deadLetterReason,
    };
  }
  const state: JobState = row.leased ? 'leased' : row.delayed ? 'delayed' : 'ready';
  return { ...base, state, queue: row.queue, attempts: row.attempts, availableAt: row.availableAt, completedAt: null, lastError: null };
}

/** The live row wins over history (an id can be published again once its first job completed). */
export function pickJobRow(rows: readonly StoredJobRow[]): StoredJobRow | undefined {
  return rows.find((r) => r.source === 'queue') ?? [...rows].sort((a, b) => (b.completedAt?.getTime() ?? 0) - (a.completedAt?.getTime() ?? 0))[0];
}

/** Opaque to callers: base64url of the cursor's JSON. */
export function encodeHistoryCursor(c: HistoryCursor): string {
  return Buffer.from(JSON.stringify([c.completedAt, c.id]), 'utf8').toString('base64url');
}

const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,7})?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** null for anything a cursor this module encoded cannot be (the caller answers 400). */
export function decodeHistoryCursor(text: string): HistoryCursor | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 2) return null;
    const [at, id] = v as unknown[];
    if (typeof at !== 'string' || typeof id !== 'string' || !CURSOR_TIME.test(at) || !UUID.test(id)) return null;
    if (Number.isNaN(Date.parse(at))) return null;
    return { completedAt: at, id };
  } catch {
    return null;
  }
}
