// The global queue settings every queue gets unless its QUEUE__<key>__… overrides them (settings/routes.ts):
// the delivery policy (leases, attempts, redelivery backoff, claim sizes, handler concurrency, dead letters) and
// the worker handler (echo, or forward to a URL).

import { LIMIT_RANGES } from '../engine/policy';
import type { Readers } from './env';

export interface PolicyDefaults {
  lockTimeoutMs: number;
  maxDeliveryAttempts: number;
  redeliveryDelayMs: number;
  redeliveryMaxDelayMs: number;
  batchSize: number;
  prefetch: number;
  /** HANDLER_CONCURRENCY: handlers running at once per queue and drain (the policy's `concurrency`). */
  concurrency: number;
  emptyPollDelayMs: number;
  /** DEAD_LETTER_ENABLED: the default of every queue's policy.deadLetter. */
  deadLetterEnabled: boolean;
  deadLetterRetentionMs: number | null;
  /** JOB_HISTORY_RETENTION_DAYS: the default of every queue's policy.historyRetentionMs (0 = no history). */
  historyRetentionMs: number;
  /** CONCURRENCY_LIMIT, RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST: every queue's limits across instances (absent = none). */
  concurrencyLimit?: number;
  rateLimitPerSecond?: number;
  rateLimitBurst?: number;
}

/** The limit settings' names, as the global setting names them (the per-queue ones are QUEUE__<key>__<name>). */
export const LIMIT_SETTINGS = {
  concurrencyLimit: 'CONCURRENCY_LIMIT',
  rateLimitPerSecond: 'RATE_LIMIT_PER_SECOND',
  rateLimitBurst: 'RATE_LIMIT_BURST',
} as const;

/**
 * One limit setting: blank = the fallback (the global setting, else no limit); 0 = no limit (so one queue can opt
 * out of a global limit); otherwise a number in the limit's range (engine/policy.ts LIMIT_RANGES).
 */
export function readLimit(num: Readers['num'], name: string, key: keyof typeof LIMIT_SETTINGS, fallback: number | undefined): number | undefined {
  const r = LIMIT_RANGES[key];
  const v = num(name, Number.NaN, { min: 0, max: r.max, integer: r.integer });
  if (Number.isNaN(v)) return fallback;
  return v === 0 ? undefined : Math.max(v, r.min);
}

/** The three limits of a policy: each setting over its fallback; a burst needs a rate. */
export function readLimits(
  num: Readers['num'],
  nameOf: (key: keyof typeof LIMIT_SETTINGS) => string | undefined,
  fallback: Pick<PolicyDefaults, keyof typeof LIMIT_SETTINGS>,
  problems: string[],
): Pick<PolicyDefaults, keyof typeof LIMIT_SETTINGS> {
  const out: Pick<PolicyDefaults, keyof typeof LIMIT_SETTINGS> = {};
  for (const key of Object.keys(LIMIT_SETTINGS) as Array<keyof typeof LIMIT_SETTINGS>) {
    const name = nameOf(key);
    const v = name === undefined ? fallback[key] : readLimit(num, name, key, fallback[key]);
    if (v !== undefined) out[key] = v;
  }
  if (out.rateLimitBurst !== undefined && out.rateLimitPerSecond === undefined) {
    problems.push(`${nameOf('rateLimitBurst') ?? LIMIT_SETTINGS.rateLimitBurst} sets a burst without a rate: set RATE_LIMIT_PER_SECOND too`);
    delete out.rateLimitBurst;
  }
  return out;
}

export interface WorkerHandlerDefaults {
  workerHandler: 'echo' | 'forward';
  workerForwardUrl?: string;
  workerForwardTimeoutMs: number;
}

export function readPolicyDefaults({ num, bool }: Readers, problems: string[]): PolicyDefaults {
  const lockTimeoutMs = num('LOCK_TIMEOUT_SECONDS', 30, { min: 1, max: 3600 }) * 1000;
  const redeliveryDelayMs = num('REDELIVERY_DELAY_SECONDS', 5, { max: 86400 }) * 1000;
  const redeliveryMaxDelayMs = num('REDELIVERY_MAX_DELAY_SECONDS', 300, { max: 86400 * 30 }) * 1000;
  if (redeliveryMaxDelayMs < redeliveryDelayMs) problems.push('REDELIVERY_MAX_DELAY_SECONDS must not be below REDELIVERY_DELAY_SECONDS');
  const retentionDays = num('DEAD_LETTER_RETENTION_DAYS', 14, { max: 3650 });
  return {
    lockTimeoutMs,
    maxDeliveryAttempts: num('MAX_DELIVERY_ATTEMPTS', 5, { max: 1000, integer: true }),
    redeliveryDelayMs,
    redeliveryMaxDelayMs,
    batchSize: num('BATCH_SIZE', 16, { min: 1, max: 1000, integer: true }),
    prefetch: num('PREFETCH', 16, { min: 0, max: 5000, integer: true }),
    concurrency: num('HANDLER_CONCURRENCY', 16, { min: 1, max: 1000, integer: true }),
    emptyPollDelayMs: num('EMPTY_POLL_DELAY_MS', 250, { min: 1, max: 60000 }),
    deadLetterEnabled: bool('DEAD_LETTER_ENABLED', true),
    deadLetterRetentionMs: retentionDays > 0 ? retentionDays * 86_400_000 : null,
    historyRetentionMs: num('JOB_HISTORY_RETENTION_DAYS', 0, { max: 3650 }) * 86_400_000,
    ...readLimits(num, (key) => LIMIT_SETTINGS[key], {}, problems),
  };
}

export function readWorkerHandler({ str, num }: Readers, problems: string[]): WorkerHandlerDefaults {
  const forwardUrl = str('WORKER_FORWARD_URL');
  if (forwardUrl !== undefined) {
    try {
      const u = new URL(forwardUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      problems.push(`WORKER_FORWARD_URL='${forwardUrl}' is not an http(s) URL`);
    }
  }
  const handlerName = str('WORKER_HANDLER') ?? (forwardUrl ? 'forward' : 'echo');
  if (handlerName !== 'echo' && handlerName !== 'forward') problems.push(`WORKER_HANDLER='${handlerName}' must be echo or forward`);
  if (handlerName === 'forward' && !forwardUrl) problems.push('WORKER_HANDLER=forward needs WORKER_FORWARD_URL');
  return {
    workerHandler: handlerName === 'forward' ? 'forward' : 'echo',
    workerForwardUrl: forwardUrl,
    workerForwardTimeoutMs: num('WORKER_FORWARD_TIMEOUT_SECONDS', 30, { min: 1, max: 600 }) * 1000,
  };
}
