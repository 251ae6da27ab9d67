// Limits that hold across instances (issue 17 §2): a queue's global concurrency limit (leased rows across every
// instance) and its rate limit (a token bucket on the queue-state row), both decided by the database inside the
// limited claim's transaction (stores/*/limited-claim-statements.ts). A queue without limits claims with the
// one-statement claim of today; this module holds the port's types and the pure arithmetic the tests pin.

/** A queue's limits; an absent field is no limit. */
export interface QueueLimits {
  /** At most this many rows of the queue leased (claimed or running) at once, across all instances. */
  concurrency?: number;
  /** At most this many claims (starts) per second, across all instances, on average. */
  ratePerSecond?: number;
  /** Token-bucket size: starts allowed at once after an idle spell. Default: DEFAULT_BURST(ratePerSecond). */
  burst?: number;
}

export type LimitReason = 'concurrency' | 'rate' | 'backoff';

export interface LimitedClaim<M> {
  messages: M[];
  /** Why the claim took fewer rows than asked while rows may be waiting; null when no limit held it back. */
  limitedBy: LimitReason | null;
  /**
   * Milliseconds (database clock) until the limit may let a row through: the next token (rate), the end of the
   * queue's backoff, or the earliest live lease's lapse (concurrency: an ack frees room sooner); null when unknown.
   */
  retryInMs: number | null;
  /**
   * The queue's leases the concurrency limit counts once this claim committed (those before it plus its rows), on
   * every instance together; null without a concurrency limit. The drain prefetches only while it is far below.
   */
  leased: number | null;
}

/** A bucket of a tenth of a second's starts (at least 1): claims stay close to the rate over any window. */
export function defaultBurst(ratePerSecond: number): number {
  return Math.max(1, Math.ceil(ratePerSecond / 10));
}

export function hasLimits(l: QueueLimits | undefined): l is QueueLimits {
  return l !== undefined && (l.concurrency !== undefined || l.ratePerSecond !== undefined);
}

/** The bucket's size for a rate: the configured burst, else the default. */
export function bucketSize(l: QueueLimits): number | null {
  return l.ratePerSecond === undefined ? null : (l.burst ?? defaultBurst(l.ratePerSecond));
}

/**
 * The token bucket after `elapsedMs` (the SQL computes the same): a bucket never seen starts full; it refills at
 * the rate and holds at most its size.
 */
export function refill(tokens: number | null, elapsedMs: number, ratePerSecond: number, size: number): number {
  if (tokens === null) return size;
  return Math.min(size, tokens + (Math.max(0, elapsedMs) * ratePerSecond) / 1000);
}

/** Rows one limited claim may take: the ask, the room under the concurrency limit, the whole tokens. */
export function limitedRoom(max: number, l: QueueLimits, leased: number, tokens: number | null): number {
  let room = Math.floor(max);
  if (l.concurrency !== undefined) room = Math.min(room, l.concurrency - leased);
  if (tokens !== null) room = Math.min(room, Math.floor(tokens));
  return Math.max(0, room);
}

/** Milliseconds until the bucket holds one whole token again. */
export function nextTokenInMs(tokens: number, ratePerSecond: number): number {
  return tokens >= 1 ? 0 : Math.ceil(((1 - tokens) * 1000) / ratePerSecond);
}
