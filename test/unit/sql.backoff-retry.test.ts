import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  classDelay,
  DEFAULT_RETRY_CLASSES,
  retryPolicy,
  TRANSIENT_CLASSES,
  withRetry,
  type RetryPolicy,
  type SimpleRetryOptions,
} from '../../shared/sql/retry';
import type { TransientClass } from '../../shared/sql/transient';
import { sqlError } from './sqlserver.fakes';

describe('backoff', () => {
  it('doubles from the base, half-jittered, capped at the maximum', () => {
    const p = { baseMs: 50, maxMs: 1000 };
    expect(backoffDelay(1, p, () => 0)).toBe(25);
    expect(backoffDelay(1, p, () => 1)).toBe(50);
    expect(backoffDelay(2, p, () => 0)).toBe(50);
    expect(backoffDelay(2, p, () => 1)).toBe(100);
    expect(backoffDelay(10, p, () => 1)).toBe(1000);
    expect(backoffDelay(50, p, () => 0)).toBe(500);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(3, p);
      expect(d).toBeGreaterThanOrEqual(100);
      expect(d).toBeLessThanOrEqual(200);
    }
  });

  it('never returns less than 1 ms', () => {
    expect(backoffDelay(1, { baseMs: 0.1, maxMs: 0.1 }, () => 0)).toBe(1);
  });
});

describe('withRetry', () => {
  const transient = (e: unknown) => (e as Error).message === 'transient';
  const noSleep = async () => undefined;

  /** withRetry over an operation that always fails with `message`: asserts it rethrows that, returns the calls made. */
  async function callsBeforeGivingUp(message: string, options: Omit<SimpleRetryOptions, 'isTransient' | 'sleep'>): Promise<number> {
    let calls = 0;
    await expect(
      withRetry(
        async () => {
          calls++;
          throw new Error(message);
        },
        { isTransient: transient, sleep: noSleep, ...options },
      ),
    ).rejects.toThrow(message);
    return calls;
  }

  it('retries transient failures up to maxAttempts, then rethrows the last error', async () => {
    const calls = await callsBeforeGivingUp('transient', { maxAttempts: 3, baseMs: 1, maxMs: 1 });
    expect(calls).toBe(3);
  });

  it('does not retry a permanent failure', async () => {
    const calls = await callsBeforeGivingUp('permanent', { maxAttempts: 5, baseMs: 1, maxMs: 1 });
    expect(calls).toBe(1);
  });

  it('gives up instead of sleeping past its deadline', async () => {
    const now = 1000;
    const calls = await callsBeforeGivingUp('transient', { maxAttempts: 10, baseMs: 500, maxMs: 500, deadline: now + 100, now: () => now, random: () => 1 });
    expect(calls).toBe(1);
  });

  it('returns the first success', async () => {
    let calls = 0;
    const v = await withRetry(
      async (attempt) => {
        calls++;
        if (attempt < 2) throw new Error('transient');
        return 'ok';
      },
      { maxAttempts: 3, baseMs: 1, maxMs: 1, isTransient: transient, sleep: noSleep },
    );
    expect([v, calls]).toEqual(['ok', 2]);
  });
});

describe('per-class backoff defaults (Microsoft: wait at least 5 s before the first retry, grow to at most 60 s)', () => {
  it('throttling and failover: the first wait is 5–10 s, no wait exceeds 60 s', () => {
    for (const cls of ['throttling', 'failover'] as const) {
      expect(classDelay(cls, 1, DEFAULT_RETRY_CLASSES, () => 0)).toBe(5_000);
      expect(classDelay(cls, 1, DEFAULT_RETRY_CLASSES, () => 1)).toBe(10_000);
      expect(classDelay(cls, 2, DEFAULT_RETRY_CLASSES, () => 0)).toBe(10_000);
      expect(classDelay(cls, 30, DEFAULT_RETRY_CLASSES, () => 1)).toBe(60_000);
    }
  });

  it('lock conflicts: tens of milliseconds, capped at 200 ms', () => {
    expect(classDelay('lock', 1, DEFAULT_RETRY_CLASSES, () => 0)).toBe(10);
    expect(classDelay('lock', 1, DEFAULT_RETRY_CLASSES, () => 1)).toBe(20);
    expect(classDelay('lock', 30, DEFAULT_RETRY_CLASSES, () => 1)).toBe(200);
  });

  it('connection faults: a fresh connection after 0.25–0.5 s, doubling to a 15 s cap', () => {
    expect(classDelay('connection', 1, DEFAULT_RETRY_CLASSES, () => 0)).toBe(250);
    expect(classDelay('connection', 1, DEFAULT_RETRY_CLASSES, () => 1)).toBe(500);
    expect(classDelay('connection', 30, DEFAULT_RETRY_CLASSES, () => 1)).toBe(15_000);
  });

  it('the defaults are frozen', () => {
    expect(Object.isFrozen(DEFAULT_RETRY_CLASSES)).toBe(true);
    expect(Object.isFrozen(DEFAULT_RETRY_CLASSES.throttling)).toBe(true);
    expect([...TRANSIENT_CLASSES]).toEqual(Object.keys(DEFAULT_RETRY_CLASSES));
  });
});

describe('retryPolicy (settings over the defaults)', () => {
  it('overrides only what is given', () => {
    const p = retryPolicy({ throttling: { baseMs: 2_000 }, lock: { maxMs: 500 }, connection: { baseMs: undefined } });
    expect(p.throttling).toEqual({ baseMs: 2_000, maxMs: 60_000 });
    expect(p.lock).toEqual({ baseMs: 20, maxMs: 500 });
    expect(p.connection).toEqual(DEFAULT_RETRY_CLASSES.connection);
    expect(p.failover).toEqual(DEFAULT_RETRY_CLASSES.failover);
  });

  it('rejects a non-positive base and a cap below its base, naming the class', () => {
    expect(() => retryPolicy({ failover: { baseMs: 0 } })).toThrow(/failover\.baseMs/);
    expect(() => retryPolicy({ lock: { baseMs: 100, maxMs: 50 } })).toThrow(/lock\.maxMs/);
    expect(() => retryPolicy({ connection: { maxMs: Number.NaN } })).toThrow(/connection\.maxMs/);
  });
});

describe('withRetry, classified path', () => {
  const policy: RetryPolicy = retryPolicy({
    lock: { baseMs: 10, maxMs: 40 },
    throttling: { baseMs: 1_000, maxMs: 8_000 },
    failover: { baseMs: 500, maxMs: 4_000 },
    connection: { baseMs: 100, maxMs: 800 },
  });

  /** A fake clock whose sleep advances it; records every wait. */
  function clock(start = 0) {
    let t = start;
    const waits: number[] = [];
    return {
      waits,
      now: () => t,
      sleep: async (ms: number) => {
        waits.push(ms);
        t += ms;
      },
    };
  }

  it('waits as the class of each failure asks; the exponent counts every failure so far', async () => {
    const c = clock();
    const faults = [sqlError(1205, 13), sqlError(40501, 16), sqlError(40613, 16), sqlError(10054, 16)];
    const seen: Array<TransientClass | undefined> = [];
    const result = await withRetry(
      async (attempt) => {
        const fault = faults[attempt - 1];
        if (fault) throw fault;
        return attempt;
      },
      { maxAttempts: 10, policy, random: () => 1, sleep: c.sleep, now: c.now, onRetry: (_e, _a, _d, cls) => seen.push(cls) },
    );
    expect(result).toBe(5);
    expect(seen).toEqual(['lock', 'throttling', 'failover', 'connection']);
    // lock 10·2^0, throttling 1000·2^1, failover 500·2^2, connection min(800, 100·2^3)
    expect(c.waits).toEqual([10, 2_000, 2_000, 800]);
  });

  it('does not retry what has no class (permanent errors, cancellations)', async () => {
    for (const err of [sqlError(2627, 14), sqlError(207, 16), Object.assign(new Error('x'), { code: 'ECANCEL', number: 40501 })]) {
      let calls = 0;
      await expect(
        withRetry(
          async () => {
            calls++;
            throw err;
          },
          { maxAttempts: 5, policy, sleep: async () => undefined },
        ),
      ).rejects.toBe(err);
      expect(calls).toBe(1);
    }
  });

  it('takes a custom classifier', async () => {
    let calls = 0;
    await withRetry(
      async () => {
        if (++calls < 3) throw new Error('custom');
        return 'ok';
      },
      { maxAttempts: 5, policy, classify: (e) => ((e as Error).message === 'custom' ? 'lock' : null), sleep: async () => undefined },
    );
    expect(calls).toBe(3);
  });

  it('never starts a wait that would end at or past the deadline: it gives up with the last error', async () => {
    const c = clock(10_000);
    const reasons: string[] = [];
    const storm = sqlError(40501, 16);
    let calls = 0;
    await expect(
      withRetry(
        async () => {
          calls++;
          throw storm;
        },
        {
          maxAttempts: 100,
          policy,
          random: () => 1,
          deadline: 10_000 + 3_500,
          sleep: c.sleep,
          now: c.now,
          onGiveUp: (_e, _a, reason) => reasons.push(reason),
        },
      ),
    ).rejects.toBe(storm);
    // waits 1000 (t = 11000) and 2000 (t = 13000); the next (4000) would end at 17000 > 13500
    expect(c.waits).toEqual([1_000, 2_000]);
    expect(calls).toBe(3);
    expect(reasons).toEqual(['deadline']);
    expect(c.now()).toBeLessThan(13_500);
  });

  it('a timer that fired late past the deadline does not start another attempt', async () => {
    let t = 0;
    let calls = 0;
    const reasons: string[] = [];
    await expect(
      withRetry(
        async () => {
          calls++;
          throw sqlError(1205, 13);
        },
        {
          maxAttempts: 10,
          policy,
          deadline: 1_000,
          now: () => t,
          sleep: async () => {
            t += 5_000; // the event loop was blocked
          },
          onGiveUp: (_e, _a, reason) => reasons.push(reason),
        },
      ),
    ).rejects.toMatchObject({ number: 1205 });
    expect(calls).toBe(1);
    expect(reasons).toEqual(['deadline']);
  });

  it('reports running out of attempts', async () => {
    const reasons: string[] = [];
    await expect(
      withRetry(
        async () => {
          throw sqlError(1222, 16);
        },
        { maxAttempts: 2, policy, sleep: async () => undefined, onGiveUp: (_e, attempt, reason) => reasons.push(`${reason}@${attempt}`) },
      ),
    ).rejects.toMatchObject({ number: 1222 });
    expect(reasons).toEqual(['attempts@2']);
  });

  it('an abort during a wait ends the loop with the abort reason; an already-aborted signal stops before waiting', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const pending = withRetry(
      async () => {
        throw sqlError(40501, 16);
      },
      { maxAttempts: 5, policy: retryPolicy({ throttling: { baseMs: 10_000, maxMs: 10_000 } }), signal: controller.signal },
    );
    setTimeout(() => controller.abort(new Error('shutting down')), 20);
    await expect(pending).rejects.toThrow('shutting down');
    expect(Date.now() - started).toBeLessThan(1_000);

    let calls = 0;
    await expect(
      withRetry(
        async () => {
          calls++;
          throw sqlError(40501, 16);
        },
        { maxAttempts: 5, policy, signal: AbortSignal.abort() },
      ),
    ).rejects.toMatchObject({ number: 40501 });
    expect(calls).toBe(1);
  });
});
