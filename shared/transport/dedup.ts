// Dedup keys, debounce and expiry (issue 16 §3): what a publish may carry besides its id, and the rules the stores
// and the drain share.
//
// A dedup key lives in the dedup table ({table}_dedup: queue, dedup_key → job_id, window_ends_at), never in the
// transport table, whose columns stay the spec's. The table's primary key (queue, dedup_key) is what makes two
// concurrent publishers of one key agree: the publish upserts the key row first, which either takes the key (new,
// or its window ended) or waits on and then reads the holder's row. The key is held for its whole window, whether
// the job has run or not (as Service Bus's duplicate detection window does); after the window ends the key is free.
//
// Expiry rides in a header (AR-Expires-At, an ISO instant): the drain ends an expired job without running it.

import type { DedupMode, Headers, OutgoingMessage } from './types';

export type { DedupMode, DedupSpec } from './types';

export const DEDUP_MODES: readonly DedupMode[] = ['drop', 'debounce'];

export const MAX_DEDUP_KEY_CHARS = 200;
export const MAX_DEDUP_WINDOW_SECONDS = 30 * 86400;
/** The job's expiry instant (ISO 8601, UTC), set by the publish from expiresAt or ttlSeconds. */
export const EXPIRES_AT_HEADER = 'AR-Expires-At';
/** The dead-letter reason of a job that expired before a handler started it. */
export const EXPIRED_REASON = 'expired';

/**
 * The expiry instant of a claimed job, or null when it has none (an unreadable header counts as none: rejecting it
 * after the claim would only bury a job the caller never asked to expire).
 */
export function expiresAt(headers: Headers): Date | null {
  const raw = headers[EXPIRES_AT_HEADER];
  if (raw === undefined) return null;
  const t = Date.parse(raw);
  return Number.isFinite(t) ? new Date(t) : null;
}

export function isExpired(headers: Headers, nowMs: number): boolean {
  const at = expiresAt(headers);
  return at !== null && at.getTime() <= nowMs;
}

/**
 * Splits a publish into statements no key repeats in: the n-th use of a (queue, key) goes into round n, so a key
 * used twice in one batch behaves as two publishes one after the other (the second finds the first holding it).
 * Messages without a key are all in round 0. Each round keeps the publish order; `index` maps back to it.
 */
export function dedupRounds(messages: readonly OutgoingMessage[]): Array<Array<{ message: OutgoingMessage; index: number }>> {
  const uses = new Map<string, number>();
  const rounds: Array<Array<{ message: OutgoingMessage; index: number }>> = [];
  messages.forEach((message, index) => {
    let round = 0;
    if (message.dedup) {
      const k = JSON.stringify([message.queue, message.dedup.key]);
      round = uses.get(k) ?? 0;
      uses.set(k, round + 1);
    }
    (rounds[round] ??= []).push({ message, index });
  });
  return rounds;
}
