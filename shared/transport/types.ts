// The transport store port: every SQL behaviour of the queue table, implemented once per dialect
// (stores/sqlserver, stores/postgres). Services and loops depend on this interface only.

import type { HistoryPage, HistoryQuery, JobRecord } from './history';
import type { WaitingJob, WaitingQuery } from './waiting';
import type { LimitedClaim, QueueLimits } from './limits';

export type StoreKind = 'sqlserver' | 'postgres' | 'pglite';

export type Headers = Record<string, string>;

/** How a publish with a held dedup key behaves (transport/dedup.ts). */
export type DedupMode = 'drop' | 'debounce';

export interface DedupSpec {
  /** 1–200 characters, compared exactly; scoped to the message's queue. */
  key: string;
  /** How long the key is held after it was taken (drop) or last debounced (debounce). */
  windowMs: number;
  /**
   * drop: a publish with a held key enqueues nothing and answers the holder's job. debounce: when the holder's job
   * is still waiting (not claimed), its payload and headers are replaced and its due time moves to now + the new
   * publish's delay; once it was claimed (or is gone), a new job is enqueued and takes the key.
   */
  mode: DedupMode;
}

/** One message to insert. `id` is the caller's idempotency key (lower-case UUID). */
export interface OutgoingMessage {
  id: string;
  queue: string;
  payloadJson: string;
  headers: Headers;
  /** 0 or less = claimable at once; otherwise available_at = DB clock + delayMs. */
  delayMs: number;
  /**
   * The id was generated for this publish (the caller gave none), so nobody else can hold it: a duplicate found
   * on a retry is this publish's own earlier attempt, which committed although its answer was lost.
   */
  generatedId?: boolean;
  /** A dedup key with its window and mode (transport/dedup.ts); absent = only the id deduplicates. */
  dedup?: DedupSpec;
  /** -32768..32767, higher claimed first (then availability order); absent = 0. */
  priority?: number;
  /**
   * Jobs of one queue with the same key run one at a time in publish order (the claim takes only the oldest row of
   * a key left in the table); absent = unordered. 1–200 characters, compared exactly.
   */
  orderingKey?: string;
}

export interface PublishOutcome {
  id: string;
  /** false when a row with this id already existed (idempotent no-op). */
  inserted: boolean;
  /** available_at of the stored row; null when a duplicate's row has already gone (consumed). */
  availableAt: Date | null;
  /** A duplicate's stored row: the queue it is on (ids are unique across queues); absent when the row is gone. */
  existingQueue?: string;
  /** The publish's dedup key was held by a waiting job, whose payload, headers and due time it replaced (debounce). */
  debounced?: boolean;
}

/** The fence every settlement carries: a statement matches only while the claim is still ours. */
export interface Settlement {
  id: string;
  lockId: string;
}

export interface ClaimedMessage extends Settlement {
  queue: string;
  payloadJson: string;
  headers: Headers;
  /** attempts after the claim's increment: the first delivery is attempt 1. */
  attempt: number;
  createdAt: Date;
  /** The job's priority (claims take higher first); absent where a store does not read it. */
  priority?: number;
  /** The job's ordering key; absent when it has none, or where a store does not read it (SQL Server). */
  orderingKey?: string;
}

/** What a drain asks ackAndTakeNext to take (transport/drain-loop.ts). */
export interface HandoverRequest {
  queue: string;
  max: number;
  lockTimeoutMs: number;
  /** A fresh lock id for the taken rows: a lost answer is handed back by it (releaseLostClaim). */
  lockId: string;
}

export interface AckAndTake {
  /** Rows the ack deleted (as `ack` returns). */
  acked: number;
  /** Successors leased to the caller, in claim order. */
  taken: ClaimedMessage[];
  /** Keys whose next job waits for a claim (promoted but not taken, or left vacant): the caller should claim soon. */
  left: number;
}

export interface DeadLetterMove {
  /** the claimed row to delete (fenced). */
  source: Settlement;
  /** id of the new dead-letter row. */
  newId: string;
  deadLetterQueue: string;
  payloadJson: string;
  /** original headers plus AR-DeadLetter-Reason / AR-DeadLetter-Source-Queue. */
  headers: Headers;
  /** raw reason for the dead_letter_reason column. */
  reason: string;
}

export interface QueueStats {
  queue: string;
  ready: number;
  delayed: number;
  leased: number;
  deadLettered: number;
  oldestReadyAgeSeconds: number | null;
}

export interface DeadLetterItem {
  id: string;
  sourceQueue: string;
  reason: string | null;
  payloadJson: string;
  headers: Headers;
  /** Deliveries the job had before it was dead-lettered; null when unknown (a row moved without them). */
  attempts: number | null;
  createdAt: Date;
}

/** A dead-letter row's attempts column: the move stores the job's deliveries (≥ 1); 0 = a row moved without them. */
export function deadLetterAttempts(value: unknown): number | null {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : null;
}

/**
 * What a queue holds for a drain right now, from one probe statement (queue mode asks after a drain and at
 * start-up, so work no drain request announced is not left for the safety-net timer).
 */
export interface ClaimOutlook {
  /** A row of the queue is claimable now (ready, or its lease lapsed). */
  due: boolean;
  /** Milliseconds on the database clock until the earliest live lease of the queue lapses; null when none (or when `due`: not read then). */
  leaseLapsesInMs: number | null;
  /**
   * Not due although rows may wait: milliseconds until the queue's hold ends (a forward target's backoff, a
   * limited queue's next token); absent or null when nothing holds it.
   */
  resumesInMs?: number | null;
}

/** A durable topic subscription as recorded in the subscriptions table. */
export interface TopicSubscription {
  topic: string;
  subscription: string;
}

/** One copy a topic publish made (or found) on one subscription queue. */
export interface TopicCopy {
  /** `{topic}:{subscription}` (topic-names.ts subscriptionQueue). */
  queue: string;
  /** topicCopyId(message id, queue). */
  id: string;
  /** false when the copy already existed (a republish): nothing new was enqueued on this queue. */
  inserted: boolean;
  /** null when a concurrent publish's copy was not yet visible to this statement. */
  availableAt: Date | null;
}

export interface TopicPublishOutcome {
  /** The message id (lower-case). */
  id: string;
  /** One per subscription recorded for the topic when the statement ran, in queue order. */
  copies: TopicCopy[];
}

export type { CancelOutcome, QueueState, RenewResult, RescheduleOutcome, RescheduleTime } from './job-control';
import type { CancelOutcome, QueueState, RenewResult, RescheduleOutcome, RescheduleTime } from './job-control';

export interface TransportStore {
  readonly kind: StoreKind;
  /** Creates (AutoCreateSchema) or verifies the schema. Single-flight; latched after success. */
  ensureSchema(): Promise<void>;
  /** Insert-if-absent for every message, in one statement. Duplicate ids are successes. */
  publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]>;
  /**
   * Topic fan-out: one copy of every message per subscription the subscriptions table holds for `topic`, read
   * inside the same INSERT … SELECT (one statement, one transaction); insert-if-absent by the copy's
   * deterministic id. The messages' `queue` is ignored.
   */
  publishToTopic(topic: string, messages: readonly OutgoingMessage[]): Promise<TopicPublishOutcome[]>;
  /** Insert-if-absent of subscriptions into the subscriptions table (never deletes); returns rows added. */
  recordSubscriptions(subscriptions: readonly TopicSubscription[]): Promise<number>;
  /** The subscriptions recorded for `topic`, by name. */
  topicSubscriptions(topic: string): Promise<TopicSubscription[]>;
  /**
   * Claims up to `max` rows of exactly `queue` from its ready set in claim order (priority, then availability, then
   * publish order), in one round trip. Every row of one claim gets `lockId` (a fresh uuid when absent), so a claim
   * whose answer was lost can be handed back by it.
   */
  claim(queue: string, max: number, lockTimeoutMs: number, lockId?: string): Promise<ClaimedMessage[]>;
  /**
   * A limited queue's claim (transport/limits.ts): at most the room its concurrency limit and token bucket leave,
   * decided in one short transaction holding the queue's queue-state row, so the limits hold across instances.
   * Also honours pause and backoff. The rows carry `lockId` as with claim (releaseLostClaim hands them back).
   */
  claimLimited(queue: string, max: number, lockTimeoutMs: number, lockId: string, limits: QueueLimits): Promise<LimitedClaim<ClaimedMessage>>;
  /**
   * Holds the queue's claims back (every instance, limited or not) for `delayMs` from the database clock, or until
   * a later backoff already stored; returns until when. A forward target's 429/503 Retry-After sets it.
   */
  backOffQueue(queue: string, delayMs: number): Promise<Date>;
  /**
   * Hands back whatever a claim whose answer never arrived (its connection broke) may have committed: the rows of
   * exactly `queue` still leased under `lockId` get their attempt back and their lease cleared, as releaseUnstarted
   * does. Rows held by an uncommitted claim are skipped (they then wait out the lease). Returns rows released.
   */
  releaseLostClaim(queue: string, lockId: string): Promise<number>;
  /** Deletes every row whose fence still matches, in one statement; returns how many were deleted. */
  ack(settlements: readonly Settlement[]): Promise<number>;
  /**
   * Ack-and-take-next (PostgreSQL and PGlite; absent elsewhere): the ack, and for each acked ordering-key head whose
   * key has a successor that a claim of `take.queue` would take now, the successor leased to the caller in the same
   * statement (as a claim leases it: attempts + 1, `take.lockId`, the lease) instead of promoted into the ready set
   * for the next claim. At most `take.max` are taken; the rest are promoted as by `ack`. stores/postgres/ready-set.ts
   * (pgHandOver) says when a successor is taken.
   */
  ackAndTakeNext?(settlements: readonly Settlement[], take: HandoverRequest): Promise<AckAndTake>;
  /**
   * The ack of a queue that keeps history (policy.historyRetentionMs > 0): deletes every row whose fence still
   * matches and inserts it into the history table as completed, in ONE statement (transport/history.ts).
   */
  ackToHistory(settlements: readonly Settlement[]): Promise<number>;
  /** One job by id: its live row (waiting, leased, or a dead letter on `deadLetterQueue`), else its newest history row. */
  findJob(id: string, deadLetterQueue: string): Promise<JobRecord | null>;
  /** A page of the history table, newest completed first, through the queue or correlation index (one statement). */
  searchHistory(query: HistoryQuery): Promise<HistoryPage>;
  /** Deletes at most one batch (1000) of `queue`'s history rows completed more than retentionMs ago; returns rows deleted. */
  pruneHistoryBatch(queue: string, retentionMs: number): Promise<number>;
  /** NAK: makes the row claimable again after delayMs (fenced). attempts is not decremented. */
  release(settlement: Settlement, delayMs: number): Promise<boolean>;
  /**
   * Hands back claims whose handlers never started (budget end, shutdown, a prefetched row not reached), in one
   * fenced statement: the lease is cleared, `attempts` goes back down by one (a delivery that never ran is no
   * attempt) and available_at is kept, so the rows keep their place in availability order. Returns rows released.
   */
  releaseUnstarted(settlements: readonly Settlement[]): Promise<number>;
  /**
   * Extends the lease; false = the lease was lost (a peer re-claimed the row); 'cancel-requested' = extended, and
   * an operator asked to cancel the running job (its headers carry CANCEL_REQUESTED_HEADER: job-control.ts).
   */
  renew(settlement: Settlement, lockTimeoutMs: number): Promise<RenewResult>;
  /** Cancels a job of exactly `queue` (job-control.ts): deletes it when waiting, marks it when leased and `running`. */
  cancel(queue: string, id: string, running: boolean): Promise<CancelOutcome>;
  /** Moves a waiting (not leased) job's available_at (database clock); a leased or absent job is left alone. */
  reschedule(queue: string, id: string, when: RescheduleTime): Promise<RescheduleOutcome>;
  /** Pauses or resumes claims from `queue` on every instance (the queue-state table; publishes are unaffected). */
  setQueuePaused(queue: string, paused: boolean): Promise<QueueState>;
  queueState(queue: string): Promise<QueueState>;
  /** Deletes the claimed row and inserts the dead-letter row in one transaction, only if the fence matched. */
  deadLetter(move: DeadLetterMove): Promise<boolean>;
  /** Deletes at most one batch (1000) of dedup keys whose window ended (transport/dedup.ts); returns rows deleted. */
  pruneDedupKeys(): Promise<number>;
  /** Deletes at most one batch (1000) of dead letters older than retentionMs; returns rows deleted. */
  pruneDeadLetterBatch(deadLetterQueue: string, retentionMs: number): Promise<number>;
  queueStats(queue: string, deadLetterQueue: string): Promise<QueueStats>;
  /**
   * The queue names that hold rows in the transport table (dead letters under the dead-letter queue's name), in
   * name order, at most `max`: a walk of the claim index that reads one row per distinct queue, not every row. The
   * queue list shows the ones no route serves (an outbox insert on an unconfigured queue).
   */
  queueNames(max: number): Promise<string[]>;
  /** A queue's waiting (unleased) rows, ready or delayed on the database clock, in the ready index's order, at most `top` (one statement). */
  listWaiting(query: WaitingQuery): Promise<WaitingJob[]>;
  /** Whether a row of exactly `queue` is claimable now and, if none is, when its earliest lease lapses (one statement). */
  claimOutlook(queue: string, limits?: QueueLimits): Promise<ClaimOutlook>;
  listDeadLetters(deadLetterQueue: string, sourceQueue: string, top: number): Promise<DeadLetterItem[]>;
  /** Moves a dead letter back onto its source queue (attempts reset, dead-letter headers removed). */
  requeueDeadLetter(deadLetterQueue: string, sourceQueue: string, id: string): Promise<boolean>;
  deleteDeadLetter(deadLetterQueue: string, sourceQueue: string, id: string): Promise<boolean>;
  /** Whether a row with this id is on exactly this queue (settles a dead-letter move whose commit went unanswered). */
  hasMessage(queue: string, id: string): Promise<boolean>;
  /** The database clock; doubles as the health probe. */
  now(): Promise<Date>;
  close(): Promise<void>;
}

export const DEAD_LETTER_REASON_HEADER = 'AR-DeadLetter-Reason';
export const DEAD_LETTER_SOURCE_HEADER = 'AR-DeadLetter-Source-Queue';
export const CORRELATION_ID_HEADER = 'AR-Correlation-Id';
