import { describe, expect, it } from 'vitest';
import { drainQueue, type DrainOptions } from '../../shared/transport/drain-loop';
import { WakeSignal } from '../../shared/transport/wake';
import { drainOptions } from '../support/drain-options';
import { MemoryStore } from '../support/memory-store';
import { message, sleep } from '../support/messages';

const options = drainOptions;

/**
 * Node 20 keeps every AbortSignal.any result in its sources' dependants set (never pruned). The set lives under an
 * internal symbol that appears on a signal once it is first used; the symbol is learnt from a probe signal.
 */
function dependantsKey(): symbol | undefined {
  const probe = new AbortController();
  AbortSignal.any([probe.signal]);
  const key = Object.getOwnPropertySymbols(probe.signal).find((s) => s.description === 'kDependantSignals');
  const set = key === undefined ? undefined : (probe.signal as unknown as Record<symbol, { size?: unknown } | undefined>)[key];
  return set?.size === 1 ? key : undefined; // Node's internal SafeSet, not an instance of this realm's Set
}

describe('drain loop', () => {
  it('idle polls leave nothing behind on the long-lived stopping signal', async (ctx) => {
    const key = dependantsKey();
    if (key === undefined) {
      console.warn('skipped: this Node does not expose AbortSignal dependants (kDependantSignals) to check');
      ctx.skip();
      return;
    }
    const stopping = new AbortController();
    const report = await drainQueue(options(new MemoryStore(), { stopping: stopping.signal, idleGraceMs: 200, emptyPollDelayMs: 1 }));
    expect(report.stoppedBy).toBe('idle');
    const dependants = (stopping.signal as unknown as Record<symbol, { size: number } | undefined>)[key];
    expect(dependants?.size ?? 0).toBe(0);
    const { EventEmitter } = await import('node:events');
    expect(EventEmitter.getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
  });

  it('drains everything, acks in batches, and stops after the idle grace', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 40 }, (_, i) => message('q', i)));
    const report = await drainQueue(options(store));
    expect(report).toMatchObject({ claimed: 40, completed: 40, stoppedBy: 'idle' });
    expect(store.inQueue('q')).toHaveLength(0);
    expect(store.calls.ack).toBeLessThan(40);
  });

  it('never runs more handlers at once than its concurrency', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 30 }, (_, i) => message('q', i)));
    let running = 0;
    let peak = 0;
    await drainQueue(
      options(store, {
        concurrency: 3,
        batchSize: 10,
        handler: async () => {
          peak = Math.max(peak, ++running);
          await sleep(5);
          running--;
        },
      }),
    );
    expect(peak).toBe(3);
  });

  it('stops claiming at its budget, lets started handlers finish, and leaves nothing leased', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 100 }, (_, i) => message('q', i)));
    const started = Date.now();
    const report = await drainQueue(
      options(store, { budgetMs: 150, concurrency: 2, batchSize: 2, handler: () => sleep(40) }),
    );
    expect(report.stoppedBy).toBe('budget');
    expect(report.completed).toBe(report.claimed - report.released);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(store.inQueue('q').every((r) => r.lockId === null)).toBe(true);
    expect(store.inQueue('q').length).toBe(100 - report.completed);
  });

  it('on shutdown, releases claims it has not started with zero delay and lets running handlers finish', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 8 }, (_, i) => message('q', i)));
    const stop = new AbortController();
    let finished = 0;
    const handler = async () => {
      stop.abort();
      await sleep(30);
      finished++;
    };
    // The first handler to start signals shutdown: the other three of its batch must not start.
    const report = await drainQueue(options(store, { stopping: stop.signal, handler, batchSize: 4, concurrency: 4 }));
    expect(report.stoppedBy).toBe('shutdown');
    expect(report.completed).toBe(1);
    expect(report.released).toBe(3);
    expect(finished).toBe(1);
    expect(store.inQueue('q').every((r) => r.lockId === null)).toBe(true);
    expect(store.inQueue('q')).toHaveLength(8 - report.completed);
  });

  it('a claim already in hand when the budget ends is handed back unstarted: no attempt spent, in one statement', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 3 }, (_, i) => message('q', i)));
    const realClaim = store.claim.bind(store);
    store.claim = async (...args) => {
      const batch = await realClaim(...args);
      await sleep(120); // the claim comes back after the budget has ended
      return batch;
    };
    let ran = 0;
    const report = await drainQueue(options(store, { budgetMs: 50, handler: async () => void ran++ }));
    expect(ran).toBe(0);
    expect(report.released).toBe(3);
    expect(store.calls.release).toHaveLength(0);
    expect(store.calls.releaseUnstarted).toHaveLength(3);
    expect(store.inQueue('q').map((r) => [r.attempts, r.lockId])).toEqual([
      [0, null],
      [0, null],
      [0, null],
    ]);
  });

  it('a hand-back that fails transiently is retried, so the rows still spend no attempt', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 3 }, (_, i) => message('q', i)));
    const realClaim = store.claim.bind(store);
    store.claim = async (...args) => {
      const batch = await realClaim(...args);
      await sleep(120); // back after the budget: the rows go back unstarted
      return batch;
    };
    store.failReleases = 2;
    const fast = { baseMs: 1, maxMs: 5 };
    const claimRetry = { lock: fast, throttling: fast, failover: fast, connection: fast };
    const report = await drainQueue(options(store, { budgetMs: 50, claimRetry }));
    expect(report).toMatchObject({ released: 3, releaseFailures: 0, completed: 0 });
    expect(store.inQueue('q').map((r) => [r.attempts, r.lockId])).toEqual([
      [0, null],
      [0, null],
      [0, null],
    ]);

    const worse = new MemoryStore();
    await worse.publish([message('q')]);
    worse.claim = async (...args) => {
      const batch = await MemoryStore.prototype.claim.apply(worse, args);
      await sleep(120);
      return batch;
    };
    worse.failReleases = 3; // every try fails: reported, and the row waits out its lease
    const failed = await drainQueue(options(worse, { budgetMs: 50, claimRetry }));
    expect(failed).toMatchObject({ released: 0, releaseFailures: 1 });
    expect(worse.inQueue('q').map((r) => r.attempts)).toEqual([1]);
  });

  it('an ack batch is resent through a fault that outlasts three tries, within the lease, and then given up', async () => {
    const fast = { baseMs: 1, maxMs: 5 };
    const claimRetry = { lock: fast, throttling: fast, failover: fast, connection: fast };
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 4 }, (_, i) => message('q', i)));
    store.failAcks = 6; // three sends (the limit before) would have left these jobs to run again
    const report = await drainQueue(options(store, { claimRetry }));
    expect(report).toMatchObject({ completed: 4, ackFailures: 0 });
    expect(store.inQueue('q')).toHaveLength(0);
    expect(store.calls.ack).toBeGreaterThanOrEqual(7);

    // a fault longer than the lease: the batch is given up once its next wait would pass the lease (250 ms, waits of
    // 50-100 ms: at most 6 sends, where the attempts alone would allow 10); the budget ends claiming, so the job's
    // lapse is not claimed again here
    const slow = { baseMs: 100, maxMs: 100 };
    const longer = new MemoryStore();
    await longer.publish([message('q')]);
    longer.failAcks = 100;
    const failed = await drainQueue(options(longer, { budgetMs: 100, lockTimeoutMs: 250, claimRetry: { lock: slow, throttling: slow, failover: slow, connection: slow } }));
    expect(failed).toMatchObject({ completed: 1, ackFailures: 1 });
    expect(longer.calls.ack).toBeGreaterThan(1);
    expect(longer.calls.ack).toBeLessThanOrEqual(6);
  });

  it('a claim that committed but whose answer was lost is handed back by its lock id: no attempt spent, no lease waited out', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 4 }, (_, i) => message('q', i)));
    store.loseClaimAnswers = 1;
    const seen: number[] = [];
    const fast = { baseMs: 1, maxMs: 5 };
    const claimRetry = { lock: fast, throttling: fast, failover: fast, connection: fast };
    // a lease of 60 s: without the hand-back the four rows would stay leased past this drain
    const report = await drainQueue(options(store, { claimRetry, lockTimeoutMs: 60_000, handler: async (job) => void seen.push(job.attempt) }));
    expect(report).toMatchObject({ claimFailures: 1, lostClaimsRecovered: 4, completed: 4 });
    expect(store.calls.releaseLostClaim).toHaveLength(1);
    expect(seen).toEqual([1, 1, 1, 1]); // the lost delivery cost no attempt
    expect(store.inQueue('q')).toEqual([]);
  });

  it('a claim failing on a fault that rolls it back (a deadlock) is not handed back by lock id', async () => {
    const store = new MemoryStore();
    await store.publish([message('q')]);
    store.failClaims = 1;
    store.claimError = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    const fast = { baseMs: 1, maxMs: 5 };
    const report = await drainQueue(options(store, { claimRetry: { lock: fast, throttling: fast, failover: fast, connection: fast } }));
    expect(report).toMatchObject({ claimFailures: 1, lostClaimsRecovered: 0, completed: 1 });
    expect(store.calls.releaseLostClaim).toEqual([]);
  });

  it('prefetch: claims ahead of free slots in fewer statements, still never more handlers than the concurrency', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 200 }, (_, i) => message('q', i)));
    let running = 0;
    let peak = 0;
    const handler = async () => {
      peak = Math.max(peak, ++running);
      await sleep(1);
      running--;
    };
    const realClaim = store.claim.bind(store);
    const claimSizes: number[] = [];
    store.claim = async (...args) => {
      const batch = await realClaim(...args);
      if (batch.length > 0) claimSizes.push(batch.length);
      return batch;
    };
    const report = await drainQueue(options(store, { concurrency: 4, batchSize: 50, prefetch: 96, handler }));
    expect(report).toMatchObject({ claimed: 200, completed: 200, released: 0, stoppedBy: 'idle' });
    expect(peak).toBe(4);
    // 200 rows in claims of up to 50 (without prefetch a claim takes at most the 4 free slots: 50 claims or more)
    expect(claimSizes.length).toBeLessThanOrEqual(6);
    expect(Math.max(...claimSizes)).toBe(50);
    expect(store.inQueue('q')).toHaveLength(0);
  });

  it('prefetch with a backlog: two claims run at once (never more); an idle queue is polled by one', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 400 }, (_, i) => message('q', i)));
    const realClaim = store.claim.bind(store);
    let open = 0;
    let peak = 0;
    store.claim = async (...args) => {
      peak = Math.max(peak, ++open);
      await sleep(15);
      const batch = await realClaim(...args);
      open--;
      return batch;
    };
    const report = await drainQueue(options(store, { concurrency: 4, batchSize: 40, prefetch: 200, handler: () => sleep(1) }));
    expect(report).toMatchObject({ claimed: 400, completed: 400, released: 0 });
    expect(peak).toBe(2);
    expect(store.inQueue('q')).toHaveLength(0);

    const idle = new MemoryStore();
    let idleOpen = 0;
    let idlePeak = 0;
    const idleClaim = idle.claim.bind(idle);
    idle.claim = async (...args) => {
      idlePeak = Math.max(idlePeak, ++idleOpen);
      await sleep(5);
      const batch = await idleClaim(...args);
      idleOpen--;
      return batch;
    };
    await drainQueue(options(idle, { concurrency: 4, batchSize: 40, prefetch: 200, idleGraceMs: 150 }));
    expect(idle.calls.claim).toBeGreaterThan(1);
    expect(idlePeak).toBe(1);
  });

  it('prefetch under a slow handler: no job starts on a lease past half its time; stale rows go back unstarted', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 8 }, (_, i) => message('q', i)));
    const lockTimeoutMs = 400;
    const starts: Array<{ id: string; leaseLeftMs: number; attempt: number }> = [];
    const handler = async (job: { id: string; attempt: number }) => {
      const row = store.rows.get(job.id)!;
      starts.push({ id: job.id, leaseLeftMs: (row.lockedUntil ?? 0) - Date.now(), attempt: job.attempt });
      await sleep(150);
    };
    const report = await drainQueue(
      options(store, { concurrency: 1, batchSize: 8, prefetch: 7, lockTimeoutMs, budgetMs: 3_000, idleGraceMs: 50, handler }),
    );
    expect(report.completed).toBe(8);
    expect(report.released).toBeGreaterThan(0); // held rows aged out and were handed back
    expect(store.calls.releaseUnstarted.length).toBe(report.released);
    for (const s of starts) expect(s.leaseLeftMs).toBeGreaterThanOrEqual(lockTimeoutMs / 2 - 20);
    expect(new Set(starts.map((s) => s.id)).size).toBe(8); // each job ran once
    expect(starts.every((s) => s.attempt === 1)).toBe(true); // hand-backs spent no attempt
    expect(store.inQueue('q')).toHaveLength(0);
  });

  it('prefetch: rows held when the budget ends go back unstarted and nothing stays leased', async () => {
    const store = new MemoryStore();
    await store.publish(Array.from({ length: 50 }, (_, i) => message('q', i)));
    const report = await drainQueue(options(store, { concurrency: 2, batchSize: 20, prefetch: 18, budgetMs: 120, handler: () => sleep(30) }));
    expect(report.stoppedBy).toBe('budget');
    expect(report.released).toBeGreaterThan(0);
    expect(report.completed).toBe(report.claimed - report.released);
    expect(store.inQueue('q').every((r) => r.lockId === null && r.attempts === 0)).toBe(true);
    expect(store.inQueue('q')).toHaveLength(50 - report.completed);
  });

  it('a same-process publish wakes an idle drain at once instead of after its poll delay', async () => {
    const store = new MemoryStore();
    const wake = new WakeSignal();
    let handledAt = 0;
    const drain = drainQueue(
      options(store, { wake, emptyPollDelayMs: 5_000, idleGraceMs: 10_000, budgetMs: 1_000, handler: async () => void (handledAt = Date.now()) }),
    );
    await sleep(50);
    const publishedAt = Date.now();
    await store.publish([message('q')]);
    wake.notify('q');
    await drain;
    expect(handledAt).toBeGreaterThan(0);
    expect(handledAt - publishedAt).toBeLessThan(200);
  });

  it('retries a transient claim failure on a backoff and ends on a permanent one', async () => {
    const store = new MemoryStore();
    await store.publish([message('q')]);
    store.failClaims = 2;
    const report = await drainQueue(options(store));
    expect(report.claimFailures).toBe(2);
    expect(report.completed).toBe(1);

    const broken = new MemoryStore();
    broken.failClaims = 1;
    broken.claimError = new Error('permission denied on table');
    const failed = await drainQueue(options(broken));
    expect(failed.stoppedBy).toBe('error');
    expect(broken.calls.claim).toBe(1);
  });
});
