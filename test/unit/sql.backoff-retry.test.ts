import { describe, expect, it } from 'vitest';
import { backoffDelay, withRetry } from '../../shared/sql/retry';

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

  it('retries transient failures up to maxAttempts, then rethrows the last error', async () => {
    let calls = 0;
    await expect(
      withRetry(
        async () => {
          calls++;
          throw new Error('transient');
        },
        { maxAttempts: 3, baseMs: 1, maxMs: 1, isTransient: transient, sleep: noSleep },
      ),
    ).rejects.toThrow('transient');
    expect(calls).toBe(3);
  });

  it('does not retry a permanent failure', async () => {
    let calls = 0;
    await expect(
      withRetry(
        async () => {
          calls++;
          throw new Error('permanent');
        },
        { maxAttempts: 5, baseMs: 1, maxMs: 1, isTransient: transient, sleep: noSleep },
      ),
    ).rejects.toThrow('permanent');
    expect(calls).toBe(1);
  });

  it('gives up instead of sleeping past its deadline', async () => {
    let calls = 0;
    const now = 1000;
    await expect(
      withRetry(
        async () => {
          calls++;
          throw new Error('transient');
        },
        { maxAttempts: 10, baseMs: 500, maxMs: 500, isTransient: transient, deadline: now + 100, now: () => now, random: () => 1, sleep: noSleep },
      ),
    ).rejects.toThrow('transient');
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
