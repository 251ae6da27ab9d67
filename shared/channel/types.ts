// The channel store port: correlated responses, live-waiter (subscriber) rows and recovery registrations,
// implemented once per dialect (stores/sqlserver/channel-*, stores/postgres/channel-*).

export interface ChannelNames {
  schema: string;
  recoveryTable: string;
  messageTable: string;
  subscriberTable: string;
  /** {messageTable}_ack_seq */
  ackSequence: string;
  recoveryExpiresIndex: string;
  messageCorrelationCreatedIndex: string;
  messageExpiresIndex: string;
  subscriberExpiresIndex: string;
}

export interface Registration {
  correlationId: string;
  registrationId: string;
  stateJson: string;
  registeredAt: Date;
  expiresAt: Date;
}

/**
 * Database timestamps the app hands back to the database (watermarks, keyset cursors) travel as the
 * database's own text (full precision: 100 ns on SQL Server, 1 µs on PostgreSQL). A JS Date keeps only
 * milliseconds: a cursor or watermark built from one would re-read or misjudge rows within the same millisecond.
 */
export type DbTimestamp = string;

/** A stored message row. `envelopeJson` is null for acknowledged rows read by a page (header-only). */
export interface ChannelMessage {
  id: string;
  correlationId: string;
  envelopeJson: string | null;
  createdAt: Date;
  /** created_at at full precision, for keyset cursors. */
  createdAtExact: DbTimestamp;
  ackedAt: Date | null;
  /** bigint as a decimal string (sequence values can pass 2^53). */
  ackedSeq: string | null;
  recoveryClaimed: boolean;
}

export interface InsertedMessage {
  id: string;
  /** false: a row with this id existed; the settlement columns are the stored row's. */
  inserted: boolean;
  /** The stored row's correlation id (a duplicate id may belong to another correlation id). */
  correlationId: string;
  createdAt: Date;
  ackedAt: Date | null;
  ackedSeq: string | null;
}

/** A waiter's watermark: the database clock (full precision) and a sequence draw taken when it registered. */
export interface SubscriptionStart {
  startedAt: DbTimestamp;
  startedSeq: string;
}

export interface OverdueMessage {
  id: string;
  correlationId: string;
  envelopeJson: string;
}

export type ChannelTable = 'messages' | 'subscribers' | 'recovery';

/** Unexpired rows of each channel table (counts over the expires_at indexes). */
export interface ChannelStats {
  storedResponses: number;
  liveWaiters: number;
  registrations: number;
}

export interface ChannelStore {
  ensureSchema(): Promise<void>;

  /**
   * Upsert (MERGE HOLDLOCK / ON CONFLICT) keyed by (correlation_id, registration_id); returns expires_at, or
   * null (nothing stored) when the correlation id already has maxPerCorrelationId other unexpired
   * registrations. Concurrent saves of one correlation id serialise, so the cap holds under races.
   */
  saveRegistration(correlationId: string, registrationId: string, stateJson: string, ttlMs: number, maxPerCorrelationId: number): Promise<Date | null>;
  /** Unexpired registrations of one correlation id, oldest first. */
  loadRegistrations(correlationId: string): Promise<Registration[]>;
  deleteRegistration(correlationId: string, registrationId: string): Promise<boolean>;

  /** Insert-if-absent with expires_at = now + retentionMs; a duplicate returns the stored row's columns. */
  insertMessage(id: string, correlationId: string, envelopeJson: string, retentionMs: number): Promise<InsertedMessage>;
  /**
   * Keyset page (created_at, id) of one correlation id's unexpired, not recovery-claimed messages that a
   * waiter with this watermark may receive: unacknowledged ones always; acknowledged ones only when acked
   * after it registered (acked_at > startedAt, or the same tick with acked_seq > startedSeq), so history is
   * never replayed. Acknowledged rows come back header-only (envelopeJson null).
   */
  loadPending(correlationId: string, watermark: SubscriptionStart, limit: number, after?: { createdAtExact: DbTimestamp; id: string }): Promise<ChannelMessage[]>;
  /** Hydrates header-only rows (at most 1000 ids per statement). */
  loadMessagesById(correlationId: string, ids: readonly string[]): Promise<ChannelMessage[]>;
  /**
   * Stamps acked_at/acked_seq on first delivery; true also for a row acked after this waiter's watermark
   * (fan-out); false once recovery owns it, it expired, or it was acked before the waiter registered (history
   * — re-checked here because a claim that was still uncommitted when the waiter read the row as unacked
   * commits first).
   */
  claimForDelivery(id: string, watermark: SubscriptionStart): Promise<boolean>;
  /** recovery_claimed = 1 WHERE acked_at IS NULL: true = recovery owns the message. */
  claimForRecovery(id: string): Promise<boolean>;
  /**
   * The recovery route, in one transaction that claims before it enqueues: recovery_claimed = 1 WHERE
   * acked_at IS NULL AND NOT recovery_claimed (unexpired, and only while the correlation id has an unexpired
   * registration), then one reference job per such registration on the transport table's callbacks queue
   * (INSERT … SELECT: the payload stays in the message row; see CallbackJob), and for a final response the
   * delete of exactly those registrations. Returns the number of jobs enqueued; null = nothing was claimed
   * (acknowledged, already routed, expired, or no registration left). So two routers cannot both route.
   */
  routeToCallbacks(id: string, correlationId: string, final: boolean): Promise<number | null>;
  /**
   * The callback sender's read: claims recovery (as claimForRecovery) and keeps the row for at least holdMs
   * more (expires_at only moves later; prune honours it), returning the stored envelope; null when a live
   * waiter acknowledged the message or its row is gone. Expiry does not matter here: a row that has not been
   * pruned is still sent.
   */
  holdForCallback(id: string, holdMs: number): Promise<string | null>;
  isAcknowledged(id: string): Promise<boolean>;
  /** SELECT SYSUTCDATETIME(), NEXT VALUE FOR {msg}_ack_seq. */
  subscriptionStart(): Promise<SubscriptionStart>;
  /**
   * Unacked, not recovery-claimed, unexpired messages created more than olderThanMs ago whose correlation
   * id has at least one unexpired registration, oldest first.
   */
  findOverdueWithRegistrations(olderThanMs: number, limit: number): Promise<OverdueMessage[]>;

  upsertSubscriber(correlationId: string, registrationId: string, instanceId: string, ttlMs: number): Promise<void>;
  /** Extends (and re-creates, if deleted or pruned) the rows of one instance's live waiters. */
  heartbeatSubscribers(instanceId: string, registrations: ReadonlyArray<{ correlationId: string; registrationId: string }>, ttlMs: number): Promise<void>;
  deleteSubscriber(correlationId: string, registrationId: string): Promise<void>;
  countActiveSubscribers(correlationId: string): Promise<number>;

  /** One bounded batch (≤ 1000 rows) of `DELETE … WHERE expires_at <= now`; returns rows deleted. */
  pruneExpiredBatch(table: ChannelTable): Promise<number>;
  /** Read-only counts for the dashboard (GET /api/channel). */
  channelStats(): Promise<ChannelStats>;
  close(): Promise<void>;
}

/**
 * Where routing enqueues callback jobs: the transport table (same database, so the claim and the enqueue share
 * one transaction) and its internal callbacks queue.
 */
export interface CallbackJobTarget {
  schema: string;
  table: string;
  queue: string;
}

export const DEFAULT_CHANNEL_TABLES = {
  recoveryTable: 'asyncresponse_recovery_state',
  messageTable: 'asyncresponse_channel_messages',
  subscriberTable: 'asyncresponse_channel_subscribers',
} as const;
