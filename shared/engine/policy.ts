import type { DeliveryPolicy } from '../transport/delivery-policy';
import { hasLimits, type QueueLimits } from '../transport/limits';

/** Everything that decides how one queue's jobs are claimed, retried and buried. Routes carry one each. */
export interface QueuePolicy extends DeliveryPolicy {
  /** true: a job out of attempts moves to the dead-letter queue; false: it is deleted (logged, counted as dropped). */
  deadLetter: boolean;
  /** Lease of a claim; renewed every third of it while a handler runs. */
  lockTimeoutMs: number;
  /** Rows claimed per claim statement (never more than free handler slots plus the prefetch). */
  batchSize: number;
  /**
   * Rows claimed ahead of free handler slots, held in claim order and started as slots free up (while half their
   * lease is left); whatever is held when a drain stops goes back unstarted, spending no attempt. 0 = never more
   * than the free slots.
   */
  prefetch: number;
  /** Handlers running at once per drain of this queue. */
  concurrency: number;
  /**
   * How long a completed job stays findable (GET /api/jobs/{id}, the history search): > 0 = its ack moves the row
   * into the history table and the prune timer removes it after this long; 0 = the ack deletes it (no history).
   */
  historyRetentionMs: number;
  /** Jobs of this queue running at once across every instance (leased rows; transport/limits.ts). Absent = no limit. */
  concurrencyLimit?: number;
  /** Starts (claims) per second across every instance, a token bucket on the database clock. Absent = no limit. */
  rateLimitPerSecond?: number;
  /** The bucket's size: starts allowed at once after an idle spell (default: a tenth of a second's, at least 1). */
  rateLimitBurst?: number;
}

/** The policy's limits as the store takes them; undefined for a queue without limits (today's claim). */
export function policyLimits(p: QueuePolicy): QueueLimits | undefined {
  const l: QueueLimits = {};
  if (p.concurrencyLimit !== undefined) l.concurrency = p.concurrencyLimit;
  if (p.rateLimitPerSecond !== undefined) {
    l.ratePerSecond = p.rateLimitPerSecond;
    if (p.rateLimitBurst !== undefined) l.burst = p.rateLimitBurst;
  }
  return hasLimits(l) ? l : undefined;
}

/** The spec's defaults (the same as the app settings' defaults, which test/unit/engine.options.test.ts pins). */
export const DEFAULT_QUEUE_POLICY: Readonly<QueuePolicy> = Object.freeze({
  maxDeliveryAttempts: 5,
  redeliveryDelayMs: 5_000,
  redeliveryMaxDelayMs: 300_000,
  deadLetter: true,
  lockTimeoutMs: 30_000,
  batchSize: 16,
  prefetch: 16,
  concurrency: 16,
  historyRetentionMs: 0,
});

type Range = { min: number; max: number; integer: boolean };
type Bounded = Exclude<keyof QueuePolicy, 'deadLetter' | OptionalLimit>;
type OptionalLimit = 'concurrencyLimit' | 'rateLimitPerSecond' | 'rateLimitBurst';

/** The limits' ranges (absent = no limit). The settings readers use the same. */
export const LIMIT_RANGES: Record<OptionalLimit, Range> = {
  concurrencyLimit: { min: 1, max: 100_000, integer: true },
  rateLimitPerSecond: { min: 0.001, max: 100_000, integer: false },
  rateLimitBurst: { min: 1, max: 100_000, integer: true },
};

const LIMITS: Record<Bounded, Range> = {
  maxDeliveryAttempts: { min: 0, max: 1000, integer: true },
  redeliveryDelayMs: { min: 0, max: 86_400_000, integer: false },
  redeliveryMaxDelayMs: { min: 0, max: 30 * 86_400_000, integer: false },
  lockTimeoutMs: { min: 1000, max: 3_600_000, integer: false },
  batchSize: { min: 1, max: 1000, integer: true },
  prefetch: { min: 0, max: 5000, integer: true },
  concurrency: { min: 1, max: 1000, integer: true },
  historyRetentionMs: { min: 0, max: 3650 * 86_400_000, integer: false },
};

const ranges = <K extends string>(r: Record<K, Range>) => Object.entries(r) as Array<[K, Range]>;

/** What is wrong with a policy given in code (settings are checked with their own names in shared/settings). */
export function policyProblems(queue: string, policy: QueuePolicy): string[] {
  const problems: string[] = [];
  const check = (key: keyof QueuePolicy, limit: Range, absent = '') => {
    const v = policy[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || (limit.integer && !Number.isInteger(v)) || v < limit.min || v > limit.max) {
      problems.push(`queue '${queue}': policy.${key} = ${String(v)} must be ${limit.integer ? 'an integer' : 'a number'} from ${limit.min} to ${limit.max}${absent}`);
    }
  };
  for (const [key, limit] of ranges(LIMITS)) check(key, limit);
  for (const [key, limit] of ranges(LIMIT_RANGES)) if (policy[key] !== undefined) check(key, limit, ' (or absent: no limit)');
  if (policy.rateLimitBurst !== undefined && policy.rateLimitPerSecond === undefined) problems.push(`queue '${queue}': policy.rateLimitBurst needs rateLimitPerSecond`);
  if (policy.redeliveryMaxDelayMs < policy.redeliveryDelayMs) problems.push(`queue '${queue}': policy.redeliveryMaxDelayMs must not be below redeliveryDelayMs`);
  if (typeof policy.deadLetter !== 'boolean') problems.push(`queue '${queue}': policy.deadLetter must be true or false`);
  return problems;
}
