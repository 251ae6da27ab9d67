// Exponential backoff with half jitter (spec §4.4) and a retry loop that never sleeps past a deadline.
//
// Two ways to retry:
//  - the simple path (spec §4.4): one { baseMs, maxMs } for every transient fault, `isTransient` decides;
//  - the classified path: classifyTransient() names the kind of fault and a RetryPolicy gives each kind its own
//    { baseMs, maxMs }. Lock conflicts are retried within tens of milliseconds; throttling and failover wait
//    seconds, as Microsoft's Azure SQL guidance asks (see DEFAULT_RETRY_CLASSES).
// Both double the wait per consecutive failure (the exponent counts every failure of the operation; the class
// of the latest failure picks base and cap), jitter it by half and cap it, and both give up instead of
// sleeping past the deadline.

import { classifyTransient, type TransientClass } from './transient';

export type { TransientClass } from './transient';

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** Per-class backoff: every transient class has its own base and cap. */
export type RetryPolicy = Readonly<Record<TransientClass, BackoffPolicy>>;

export const TRANSIENT_CLASSES: readonly TransientClass[] = Object.freeze(['lock', 'throttling', 'failover', 'connection']);

/**
 * Defaults. Microsoft's guidance for Azure SQL transient faults ("Troubleshoot transient connection errors in SQL
 * Database and SQL Managed Instance", learn.microsoft.com/azure/azure-sql/database/troubleshoot-common-connectivity-issues,
 * section "Interval increase between retries"; the same text is in "Troubleshooting connectivity issues and other
 * errors", section "Implementing retry logic"): delay 5 seconds before the first retry — shorter risks
 * overwhelming the service — then grow the delay exponentially up to 60 seconds; most reconfigurations finish in
 * under 60 seconds; after a transient error during a command, retry on a freshly established connection.
 * With half jitter the first wait is in [base/2, base], so:
 *  - throttling and failover: base 10 s, cap 60 s → first retry after 5–10 s, waits capped at 30–60 s;
 *  - connection (a reset or timed-out connection, a refused socket, a pool acquire timeout): the failed
 *    connection is discarded and the retry runs on a fresh one; the timeout itself has usually spent seconds
 *    already, so the first wait is short (0.25–0.5 s, tedious's own connection retry interval is 500 ms) and
 *    doubles to a 15 s cap (a failover that shows up as refused sockets reaches seconds within a few attempts);
 *  - lock (deadlock victim 1205, lock timeout 1222; not an Azure resource signal): the competing transaction
 *    is usually gone within milliseconds: 10–20 ms, capped at 100–200 ms.
 * Every value is configurable (see the settings in the report / docs/configuration.md); tests inject tiny ones.
 */
export const DEFAULT_RETRY_CLASSES: RetryPolicy = Object.freeze({
  lock: Object.freeze({ baseMs: 20, maxMs: 200 }),
  throttling: Object.freeze({ baseMs: 10_000, maxMs: 60_000 }),
  failover: Object.freeze({ baseMs: 10_000, maxMs: 60_000 }),
  connection: Object.freeze({ baseMs: 500, maxMs: 15_000 }),
});

/**
 * A policy from partial overrides (e.g. settings) over a base policy. Throws on a non-positive base, a
 * non-finite value or a cap below its base, naming the class.
 */
export function retryPolicy(
  overrides: Partial<Record<TransientClass, Partial<BackoffPolicy>>> = {},
  base: RetryPolicy = DEFAULT_RETRY_CLASSES,
): RetryPolicy {
  const out = {} as Record<TransientClass, BackoffPolicy>;
  for (const cls of TRANSIENT_CLASSES) {
    const merged = { ...base[cls], ...stripUndefined(overrides[cls] ?? {}) };
    if (!(Number.isFinite(merged.baseMs) && merged.baseMs > 0)) throw new RangeError(`retry policy: ${cls}.baseMs must be a positive number`);
    if (!(Number.isFinite(merged.maxMs) && merged.maxMs >= merged.baseMs)) {
      throw new RangeError(`retry policy: ${cls}.maxMs must be a number not below ${cls}.baseMs`);
    }
    out[cls] = Object.freeze(merged);
  }
  return Object.freeze(out);
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** delay after the n-th failure: d = min(max, base * 2^(n-1)) (exponent capped at 10), then d/2 + rand * d/2. */
export function backoffDelay(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 10);
  const d = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.max(1, d / 2 + random() * (d / 2));
}

/** The backoff after the n-th consecutive failure whose latest fault is of class `cls`. */
export function classDelay(cls: TransientClass, failures: number, policy: RetryPolicy = DEFAULT_RETRY_CLASSES, random?: () => number): number {
  return backoffDelay(failures, policy[cls], random);
}

interface RetryOptionsBase {
  maxAttempts: number;
  /** epoch ms: no attempt starts after it and no wait runs past it (the invocation budget). */
  deadline?: number;
  signal?: AbortSignal;
  /** `cls` is set on the classified path. */
  onRetry?: (err: unknown, attempt: number, delayMs: number, cls?: TransientClass) => void;
  /** Called once when the loop stops on a transient error (attempts, budget or signal), just before it rethrows it. */
  onGiveUp?: (err: unknown, attempt: number, reason: 'attempts' | 'deadline' | 'aborted') => void;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
}

/** The simple path (spec §4.4): one backoff for every fault `isTransient` accepts. */
export interface SimpleRetryOptions extends RetryOptionsBase, BackoffPolicy {
  isTransient: (err: unknown) => boolean;
}

/** The classified path: `classify` (default classifyTransient) names the class, `policy` gives its backoff. */
export interface ClassifiedRetryOptions extends RetryOptionsBase {
  policy: RetryPolicy;
  classify?: (err: unknown) => TransientClass | null;
}

export type RetryOptions = SimpleRetryOptions | ClassifiedRetryOptions;

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function isClassified(options: RetryOptions): options is ClassifiedRetryOptions {
  return (options as ClassifiedRetryOptions).policy !== undefined;
}

/**
 * Runs `action` up to maxAttempts times, retrying transient failures only; the last error propagates unchanged.
 * A wait that would end at or after the deadline is not started: the loop gives up at once with that error.
 */
export async function withRetry<T>(action: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const pause = options.sleep ?? sleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await action(attempt);
    } catch (err) {
      let delay: number;
      let cls: TransientClass | undefined;
      if (isClassified(options)) {
        const found = (options.classify ?? classifyTransient)(err);
        if (found === null) throw err;
        cls = found;
        delay = classDelay(found, attempt, options.policy, options.random);
      } else {
        if (!options.isTransient(err)) throw err;
        delay = backoffDelay(attempt, options, options.random);
      }
      if (options.signal?.aborted) {
        options.onGiveUp?.(err, attempt, 'aborted');
        throw err;
      }
      if (attempt >= options.maxAttempts) {
        options.onGiveUp?.(err, attempt, 'attempts');
        throw err;
      }
      if (options.deadline !== undefined && now() + delay >= options.deadline) {
        options.onGiveUp?.(err, attempt, 'deadline');
        throw err;
      }
      options.onRetry?.(err, attempt, delay, cls);
      await pause(delay, options.signal); // an abort while waiting rejects with the signal's reason
      if (options.deadline !== undefined && now() >= options.deadline) {
        // a timer that fired late: never start an attempt past the budget
        options.onGiveUp?.(err, attempt, 'deadline');
        throw err;
      }
    }
  }
}
