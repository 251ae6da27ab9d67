// The limited claim's answer from its summary row, the same for both dialects (stores/*/limit-statements.ts):
// which limit held the claim back, and when it may let a row through (transport/limits.ts).

import { nextTokenInMs, type LimitedClaim, type QueueLimits } from '../transport/limits';
import type { ClaimOutlook } from '../transport/types';

export interface LimitState {
  held?: unknown;
  backoff_ms?: unknown;
  tokens_left?: unknown;
  leased?: unknown;
  lease_lapses_in_ms?: unknown;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function limitedClaimOf<M>(messages: M[], state: LimitState | undefined, max: number, limits: QueueLimits): LimitedClaim<M> {
  const before = state === undefined ? null : num(state.leased);
  const leased = limits.concurrency === undefined || before === null ? null : before + messages.length;
  if (messages.length >= Math.floor(max) || state === undefined) return { messages, limitedBy: null, retryInMs: null, leased };
  const backoff = num(state.backoff_ms);
  if (state.held === true || state.held === 1) {
    return backoff === null ? { messages, limitedBy: null, retryInMs: null, leased } : { messages, limitedBy: 'backoff', retryInMs: Math.max(0, Math.ceil(backoff)), leased };
  }
  if (limits.concurrency !== undefined && (before ?? 0) + messages.length >= limits.concurrency) {
    const lapse = num(state.lease_lapses_in_ms);
    return { messages, limitedBy: 'concurrency', retryInMs: lapse === null ? null : Math.max(0, Math.ceil(lapse)), leased };
  }
  const tokens = num(state.tokens_left);
  if (limits.ratePerSecond !== undefined && tokens !== null && tokens < 1) {
    return { messages, limitedBy: 'rate', retryInMs: nextTokenInMs(tokens, limits.ratePerSecond), leased };
  }
  return { messages, limitedBy: null, retryInMs: null, leased };
}

export interface LimitedOutlookRow extends LimitState {
  ready?: unknown;
  paused?: unknown;
  tokens?: unknown;
}

/**
 * A limited queue is due only when a claim would take a row now: ready rows, not paused or backed off, room under
 * the concurrency limit and a whole token. Otherwise the drain request goes out when room may appear: at the
 * earliest lease lapse (concurrency; a drain still running settles sooner and asks again when it ends), at the
 * backoff's end, or at the next token.
 */
export function limitedOutlookOf(row: LimitedOutlookRow | undefined, limits: QueueLimits): ClaimOutlook {
  const lapse = num(row?.lease_lapses_in_ms);
  const leaseLapsesInMs = lapse === null ? null : Math.max(0, lapse);
  const flag = (v: unknown) => v === true || v === 1;
  if (row === undefined || flag(row.paused)) return { due: false, leaseLapsesInMs };
  const backoff = num(row.backoff_ms);
  if (backoff !== null) return { due: false, leaseLapsesInMs, resumesInMs: Math.max(0, Math.ceil(backoff)) };
  if (!flag(row.ready)) return { due: false, leaseLapsesInMs };
  if (limits.concurrency !== undefined && (num(row.leased) ?? 0) >= limits.concurrency) return { due: false, leaseLapsesInMs };
  const tokens = num(row.tokens);
  if (limits.ratePerSecond !== undefined && tokens !== null && tokens < 1) {
    return { due: false, leaseLapsesInMs, resumesInMs: nextTokenInMs(tokens, limits.ratePerSecond) };
  }
  return { due: true, leaseLapsesInMs: null };
}
