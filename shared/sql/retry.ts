// Exponential backoff with half jitter (spec §4.4) and a retry loop that never sleeps past a deadline.

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** delay after the n-th failure: d = min(max, base * 2^(n-1)) (exponent capped at 10), then d/2 + rand * d/2. */
export function backoffDelay(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 10);
  const d = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.max(1, d / 2 + random() * (d / 2));
}

export interface RetryOptions extends BackoffPolicy {
  maxAttempts: number;
  isTransient: (err: unknown) => boolean;
  /** epoch ms after which no further attempt starts (the invocation budget). */
  deadline?: number;
  signal?: AbortSignal;
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
}

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

/** Runs `action` up to maxAttempts times, retrying transient failures only; the last error propagates. */
export async function withRetry<T>(action: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const pause = options.sleep ?? sleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await action(attempt);
    } catch (err) {
      if (attempt >= options.maxAttempts || !options.isTransient(err) || options.signal?.aborted) throw err;
      const delay = backoffDelay(attempt, options, options.random);
      if (options.deadline !== undefined && now() + delay >= options.deadline) throw err;
      options.onRetry?.(err, attempt, delay);
      await pause(delay, options.signal);
    }
  }
}
