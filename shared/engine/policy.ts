import type { DeliveryPolicy } from '../transport/delivery-policy';

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

const LIMITS: Record<Exclude<keyof QueuePolicy, 'deadLetter'>, { min: number; max: number; integer: boolean }> = {
  maxDeliveryAttempts: { min: 0, max: 1000, integer: true },
  redeliveryDelayMs: { min: 0, max: 86_400_000, integer: false },
  redeliveryMaxDelayMs: { min: 0, max: 30 * 86_400_000, integer: false },
  lockTimeoutMs: { min: 1000, max: 3_600_000, integer: false },
  batchSize: { min: 1, max: 1000, integer: true },
  prefetch: { min: 0, max: 5000, integer: true },
  concurrency: { min: 1, max: 1000, integer: true },
  historyRetentionMs: { min: 0, max: 3650 * 86_400_000, integer: false },
};

/** What is wrong with a policy given in code (settings are checked with their own names in shared/settings). */
export function policyProblems(queue: string, policy: QueuePolicy): string[] {
  const problems: string[] = [];
  for (const [key, limit] of Object.entries(LIMITS) as Array<[keyof typeof LIMITS, (typeof LIMITS)[keyof typeof LIMITS]]>) {
    const v = policy[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || (limit.integer && !Number.isInteger(v)) || v < limit.min || v > limit.max) {
      problems.push(`queue '${queue}': policy.${key} = ${String(v)} must be ${limit.integer ? 'an integer' : 'a number'} from ${limit.min} to ${limit.max}`);
    }
  }
  if (policy.redeliveryMaxDelayMs < policy.redeliveryDelayMs) problems.push(`queue '${queue}': policy.redeliveryMaxDelayMs must not be below redeliveryDelayMs`);
  if (typeof policy.deadLetter !== 'boolean') problems.push(`queue '${queue}': policy.deadLetter must be true or false`);
  return problems;
}
