// The drain loop on a limited queue (issue 17 §2): claims go through the limited claim, never more handlers run
// than the limit allows across drains, a claim the limits held back waits (next token, a poll, or a local handler
// ending) instead of spinning, and a backed-off queue's drain ends idle. The limit arithmetic is pinned too.

import { describe, expect, it } from 'vitest';
import { drainQueue, type DrainOptions } from '../../shared/transport/drain-loop';
import { defaultBurst, limitedRoom, nextTokenInMs, refill } from '../../shared/transport/limits';
import { limitedClaimOf, limitedOutlookOf } from '../../shared/stores/limited-claim';
import { drainOptions } from '../support/drain-options';
import { MemoryStore } from '../support/memory-store';
import { message, sleep } from '../support/messages';

function options(store: MemoryStore, extra: Partial<DrainOptions> = {}): DrainOptions {
  return drainOptions(store, { batchSize: 8, concurrency: 8, prefetch: 16, emptyPollDelayMs: 50, ...extra });
}

describe('limit arithmetic', () => {
  it('a bucket starts full, refills at the rate up to its size; the room is the least of ask, limit and whole tokens', () => {
    expect(defaultBurst(5)).toBe(1);
    expect(defaultBurst(100)).toBe(10);
    expect(refill(null, 0, 10, 3)).toBe(3);
    expect(refill(0.5, 100, 10, 3)).toBeCloseTo(1.5);
    expect(refill(2, 10_000, 10, 3)).toBe(3);
    expect(limitedRoom(16, { concurrency: 5 }, 3, null)).toBe(2);
    expect(limitedRoom(16, { concurrency: 5 }, 7, null)).toBe(0);
    expect(limitedRoom(16, { ratePerSecond: 10 }, 0, 2.9)).toBe(2);
    expect(nextTokenInMs(0.5, 10)).toBe(50);
    expect(nextTokenInMs(1.2, 10)).toBe(0);
  });

  it("a claim's summary says which limit held it back and when room may appear", () => {
    const three = [1, 2, 3];
    expect(limitedClaimOf(three, { held: false, leased: 0 }, 3, { concurrency: 5 })).toEqual({ messages: three, limitedBy: null, retryInMs: null, leased: 3 });
    expect(limitedClaimOf([1], { held: false, leased: 4, lease_lapses_in_ms: '900' }, 3, { concurrency: 5 })).toMatchObject({ limitedBy: 'concurrency', retryInMs: 900 });
    expect(limitedClaimOf([], { held: true, backoff_ms: 1200.2 }, 3, { concurrency: 5 })).toMatchObject({ limitedBy: 'backoff', retryInMs: 1201 });
    expect(limitedClaimOf([], { held: 1, backoff_ms: null }, 3, { concurrency: 5 })).toMatchObject({ limitedBy: null }); // paused
    expect(limitedClaimOf([1], { held: false, tokens_left: 0.25, leased: 0 }, 3, { ratePerSecond: 10 })).toMatchObject({ limitedBy: 'rate', retryInMs: 75 });
    expect(limitedClaimOf([], { held: false, tokens_left: 2, leased: 0 }, 3, { ratePerSecond: 10 })).toMatchObject({ limitedBy: null }); // empty queue
  });

  it('a limited queue is due only when a claim would take a row now; otherwise it says when', () => {
    const l = { concurrency: 2, ratePerSecond: 10 };
    expect(limitedOutlookOf({ ready: true, paused: false, leased: 1, tokens: 1 }, l)).toEqual({ due: true, leaseLapsesInMs: null });
    expect(limitedOutlookOf({ ready: true, paused: false, leased: 2, lease_lapses_in_ms: 700 }, l)).toEqual({ due: false, leaseLapsesInMs: 700 });
    expect(limitedOutlookOf({ ready: true, paused: false, leased: 0, tokens: 0.5 }, l)).toEqual({ due: false, leaseLapsesInMs: null, resumesInMs: 50 });
    expect(limitedOutlookOf({ ready: true, paused: false, backoff_ms: 3000 }, l)).toEqual({ due: false, leaseLapsesInMs: null, resumesInMs: 3000 });
    expect(limitedOutlookOf({ ready: true, paused: true }, l)).toEqual({ due: false, leaseLapsesInMs: null });
    expect(limitedOutlookOf({ ready: false, paused: false, lease_lapses_in_ms: 5 }, l)).toEqual({ due: false, leaseLapsesInMs: 5 });
  });
});

describe('drain loop with limits', () => {
  it('two drains of a queue limited to 3 never run more than 3 handlers together, and finish the queue', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 40 }, (_, i) => message('q', i)));
    let running = 0;
    let most = 0;
    const handler = async () => {
      most = Math.max(most, ++running);
      await sleep(5);
      running--;
    };
    const reports = await Promise.all([1, 2].map(() => drainQueue(options(store, { handler, limits: { concurrency: 3 } }))));
    expect(reports.reduce((n, r) => n + r.completed, 0)).toBe(40);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBe(3);
    expect(reports.every((r) => r.released === 0)).toBe(true); // no prefetch on a limited queue: nothing handed back
    // a claim held back waits for a handler or a poll: no spinning (40 jobs in batches of at most 3 rows)
    expect(store.calls2.claimLimited).toBeLessThan(150);
  });

  /** Each limited claim's row count asked, and the most handlers run at once, draining 60 jobs under `limits`. */
  const claimSizes = async (limits: DrainOptions['limits']) => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 60 }, (_, i) => message('q', i)));
    const asked: number[] = [];
    const claim = store.claimLimited.bind(store);
    store.claimLimited = (queue, max, ...rest) => {
      asked.push(max);
      return claim(queue, max, ...rest);
    };
    let running = 0;
    let most = 0;
    const handler = async () => {
      most = Math.max(most, ++running);
      await sleep(2);
      running--;
    };
    const report = await drainQueue(options(store, { handler, limits, concurrency: 2, batchSize: 8, prefetch: 16 }));
    return { asked, most, report };
  };

  it('far below its concurrency limit a drain prefetches; near it, or under a rate limit, it asks for its free slots only', async () => {
    // limit 1,000: the first claim asks for the free slots; once a claim reported the leases (2) far below, the buffer refills
    const far = await claimSizes({ concurrency: 1000 });
    expect(far.report.completed).toBe(60);
    expect(far.asked[0]).toBe(2);
    expect(Math.max(...far.asked)).toBe(8); // a batch beyond the 2 handler slots
    expect(far.most).toBe(2);
    // limit 30: 2 handlers + 16 prefetched would pass half the limit: never more than the free slots
    const near = await claimSizes({ concurrency: 30 });
    expect(near.report.completed).toBe(60);
    expect(Math.max(...near.asked)).toBeLessThanOrEqual(2);
    // a rate limit (with a high concurrency limit beside it) never prefetches
    const rate = await claimSizes({ concurrency: 1000, ratePerSecond: 2000, burst: 50 });
    expect(rate.report.completed).toBe(60);
    expect(Math.max(...rate.asked)).toBeLessThanOrEqual(2);
  });

  it('a rate-limited drain waits for the next token and keeps draining instead of ending idle', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 12 }, (_, i) => message('q', i)));
    const started = Date.now();
    const report = await drainQueue(options(store, { limits: { ratePerSecond: 40, burst: 2 }, idleGraceMs: 30 }));
    const ms = Date.now() - started;
    expect(report.completed).toBe(12);
    // 2 at once, then one every 25 ms: at least 10 × 25 ms
    expect(ms).toBeGreaterThanOrEqual(240);
    expect(store.calls2.claimLimited).toBeLessThan(40);
  });

  it("a backed-off queue's drain polls at the empty-poll pace and ends idle, its jobs left waiting", async () => {
    const store = new MemoryStore();
    await store.publish([message('q', 1)]);
    store.backoffUntil.set('q', Date.now() + 60_000);
    const report = await drainQueue(options(store, { limits: { concurrency: 2 }, idleGraceMs: 300, emptyPollDelayMs: 50 }));
    expect(report).toMatchObject({ stoppedBy: 'idle', claimed: 0 });
    expect(store.calls2.claimLimited).toBeLessThanOrEqual(9);
  });
});
