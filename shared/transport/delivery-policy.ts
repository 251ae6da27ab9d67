import { backoffDelay } from '../sql/retry';

export interface DeliveryPolicy {
  /** 0 = unlimited. */
  maxDeliveryAttempts: number;
  redeliveryDelayMs: number;
  redeliveryMaxDelayMs: number;
  /**
   * What happens to a job out of attempts (or failed for good): moved to the dead-letter queue (true, the default)
   * or deleted (false: the spec's DeadLetterEnabled = false), logged and counted as dropped.
   */
  deadLetter?: boolean;
}

/** A delivery already past the cap (crashes and lapsed leases never reach the failure path) is buried unrun. */
export function exceedsCap(attempt: number, policy: DeliveryPolicy): boolean {
  return policy.maxDeliveryAttempts > 0 && attempt > policy.maxDeliveryAttempts;
}

/** A failure on this attempt is the last one allowed: dead-letter instead of NAK. */
export function isLastAttempt(attempt: number, policy: DeliveryPolicy): boolean {
  return policy.maxDeliveryAttempts > 0 && attempt >= policy.maxDeliveryAttempts;
}

/** NAK delay after failed attempt n: exponential from the base, capped, half-jittered. */
export function redeliveryDelay(attempt: number, policy: DeliveryPolicy, random: () => number = Math.random): number {
  if (policy.redeliveryDelayMs <= 0) return 0;
  return Math.round(backoffDelay(attempt, { baseMs: policy.redeliveryDelayMs, maxMs: policy.redeliveryMaxDelayMs }, random));
}
