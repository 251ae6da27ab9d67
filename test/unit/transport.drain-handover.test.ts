// The drain loop's side of ack-and-take-next (transport/drain-loop.ts): the room a keyed job's finished handler
// leaves is kept for its successor, the loop waits on such an ack instead of spinning, taken rows join the buffer
// (or go back when the drain stopped), a lost answer is handed back by the ack's lock id, and a rate-limited queue
// does not ask. The SQL itself is pinned by test/contract/postgres.ack-take-next.contract.test.ts.
import { describe, expect, it } from 'vitest';
import { drainQueue, type DrainOptions } from '../../shared/transport/drain-loop';
import type { AckAndTake, ClaimedMessage, HandoverRequest, Settlement } from '../../shared/transport/types';
import { drainOptions } from '../support/drain-options';
import { MemoryStore } from '../support/memory-store';
import { message, sleep } from '../support/messages';

/** MemoryStore with ordering keys: a claim takes only a key's first row; an ack may lease the key's next row. */
class KeyedStore extends MemoryStore {
  takes: Array<{ max: number; keyed: number; taken: number; lockId: string }> = [];
  ackDelayMs = 0;
  /** The next acks commit and then fail with claimError (the answer lost). */
  loseAckAnswers = 0;

  private headOf(queue: string, key: string) {
    return [...this.rows.values()].filter((r) => r.queue === queue && r.orderingKey === key).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))[0];
  }

  override async claim(queue: string, max: number, lockTimeoutMs: number, lockId?: string): Promise<ClaimedMessage[]> {
    // hide every keyed row that is not its key's head for the claim of the base class
    const hidden = [...this.rows.values()].filter((r) => r.orderingKey !== undefined && this.headOf(r.queue, r.orderingKey) !== r);
    for (const r of hidden) this.rows.delete(r.id);
    try {
      return await super.claim(queue, max, lockTimeoutMs, lockId);
    } finally {
      for (const r of hidden) this.rows.set(r.id, r);
    }
  }

  async ackAndTakeNext(settlements: readonly Settlement[], take: HandoverRequest): Promise<AckAndTake> {
    if (this.ackDelayMs > 0) await sleep(this.ackDelayMs);
    const keys = settlements.map((s) => this.rows.get(s.id)).filter((r) => r?.lockId !== undefined && r.orderingKey !== undefined);
    const acked = await this.ack(settlements);
    const taken: ClaimedMessage[] = [];
    let left = 0;
    for (const gone of keys) {
      const next = this.headOf(gone!.queue, gone!.orderingKey!);
      if (!next) continue;
      if (taken.length >= take.max || next.queue !== take.queue) {
        left++;
        continue;
      }
      next.attempts++;
      next.lockedUntil = Date.now() + take.lockTimeoutMs;
      next.lockId = take.lockId;
      taken.push({ id: next.id, lockId: take.lockId, queue: next.queue, payloadJson: next.payloadJson, headers: next.headers, attempt: next.attempts, createdAt: new Date(next.createdAt), orderingKey: next.orderingKey! });
    }
    this.takes.push({ max: take.max, keyed: settlements.filter((s) => (s as Partial<ClaimedMessage>).orderingKey !== undefined).length, taken: taken.length, lockId: take.lockId });
    if (this.loseAckAnswers > 0) {
      this.loseAckAnswers--;
      throw this.claimError;
    }
    return { acked, taken, left };
  }
}

function options(store: KeyedStore, extra: Partial<DrainOptions> = {}): DrainOptions {
  return drainOptions(store, { batchSize: 8, prefetch: 4, budgetMs: 10_000, ...extra });
}

async function publishKeys(store: KeyedStore, keys: number, perKey: number) {
  for (let n = 1; n <= perKey; n++) {
    await store.publish(Array.from({ length: keys }, (_, k) => message('q', { k, n }, { orderingKey: `k${k}` })));
    await sleep(2); // createdAt orders a key's jobs
  }
}

describe('drain loop: ack-and-take-next', () => {
  it('runs each key in order with the successors its acks took, keeping their room from claims', async () => {
    const store = new KeyedStore();
    await publishKeys(store, 4, 6);
    const order = new Map<number, number[]>();
    const report = await drainQueue(
      options(store, {
        handler: async (job) => {
          const { k, n } = JSON.parse(job.payloadJson) as { k: number; n: number };
          order.set(k, [...(order.get(k) ?? []), n]);
        },
      }),
    );
    expect(report.completed).toBe(24);
    for (const [, ns] of order) expect(ns).toEqual([1, 2, 3, 4, 5, 6]);
    expect(store.takes.length).toBeGreaterThan(0);
    // every keyed ack was offered room for all of its successors: a claim sent meanwhile did not take that room
    for (const t of store.takes) expect(t.max).toBe(t.keyed);
    expect(store.takes.reduce((a, t) => a + t.taken, 0)).toBe(20); // all but the 4 heads came with acks
  });

  it('waits on a slow ack that keeps room instead of spinning, and the event loop keeps turning', async () => {
    const store = new KeyedStore();
    store.ackDelayMs = 50;
    // as many keys as the drain holds, and no budget (engine.run): while the acks are out, nothing runs, nothing is
    // buffered and no room is left to claim, so only the ack can end the wait
    await publishKeys(store, 4, 3);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      const report = await drainQueue(options(store, { concurrency: 2, prefetch: 2, budgetMs: Infinity }));
      expect(report.completed).toBe(12);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(10);
  });

  it('a drain stopped while an ack takes successors hands them back unstarted', async () => {
    const store = new KeyedStore();
    store.ackDelayMs = 50;
    await publishKeys(store, 3, 3);
    const stop = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // stop while the first acks (50 ms each) are on their way: they were sent asking for successors
    const report = await drainQueue(options(store, { stopping: stop.signal, handler: async () => void (timer ??= setTimeout(() => stop.abort(), 20)) }));
    expect(report.stoppedBy).toBe('shutdown');
    const taken = store.takes.reduce((a, t) => a + t.taken, 0);
    expect(taken).toBeGreaterThan(0);
    expect(store.calls.releaseUnstarted.length).toBeGreaterThanOrEqual(taken);
    expect([...store.rows.values()].filter((r) => r.lockId !== null && r.lockedUntil !== null && r.lockedUntil > Date.now())).toEqual([]);
  });

  it('an ack whose answer was lost hands back what its lock id took, and the jobs still run in order', async () => {
    const store = new KeyedStore();
    await publishKeys(store, 2, 3);
    store.loseAckAnswers = 1;
    const seen: string[] = [];
    const report = await drainQueue(options(store, { handler: async (job) => void seen.push(job.payloadJson) }));
    expect(store.calls.releaseLostClaim).toContain(store.takes[0]!.lockId);
    expect(report.completed).toBe(6);
    expect(store.rows.size).toBe(0);
    for (const k of [0, 1]) {
      const ns = seen.map((p) => JSON.parse(p) as { k: number; n: number }).filter((j) => j.k === k).map((j) => j.n);
      expect(ns).toEqual([1, 2, 3]);
    }
  });

  it('a rate-limited queue does not ask for successors (tokens are a claim\'s)', async () => {
    const store = new KeyedStore();
    await publishKeys(store, 2, 2);
    const report = await drainQueue(options(store, { limits: { ratePerSecond: 1000 } }));
    expect(report.completed).toBe(4);
    expect(store.takes).toEqual([]);
  });
});
