// The dead-letter move under faults: retried on transient errors, and a move whose commit went unanswered is
// recognised (its derived dead-letter id is found) instead of being counted as a retry.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { retryPolicy } from '../../shared/sql/retry';
import { AckBatcher } from '../../shared/transport/ack-batcher';
import { dispatchDelivery, type DispatchDeps } from '../../shared/transport/dispatcher';
import type { ClaimedMessage, TransportStore } from '../../shared/transport/types';
import { MemoryStore } from '../support/memory-store';
import { message } from '../support/messages';

const fast = { baseMs: 1, maxMs: 2 };

function deps(store: MemoryStore, deadLettered: string[]): DispatchDeps {
  const s = store as unknown as TransportStore;
  return {
    store: s,
    acks: new AckBatcher((b) => s.ack(b), 16, silentLogger),
    policy: { maxDeliveryAttempts: 1, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0 },
    lockTimeoutMs: 30_000,
    deadLetterQueue: 'dlq',
    logger: silentLogger,
    retry: retryPolicy({ lock: fast, throttling: fast, failover: fast, connection: fast }),
    onDeadLettered: async (job) => {
      deadLettered.push(job!.id);
    },
  };
}

async function claimOne(store: MemoryStore): Promise<ClaimedMessage> {
  await store.publish([message('q', 1)]);
  const [c] = await store.claim('q', 1, 30_000);
  return c!;
}

const failing = async () => {
  throw new Error('handler failed');
};

describe('dead-letter move under faults', () => {
  it('a move that committed but lost its answer counts as dead-lettered and still runs the follow-up once', async () => {
    const store = new MemoryStore();
    const c = await claimOne(store);
    store.deadLetterFaults = ['after'];
    const followUps: string[] = [];
    expect(await dispatchDelivery(c, failing, deps(store, followUps))).toBe('dead-lettered');
    expect(store.calls.deadLetter).toBe(2); // the retry found the source gone (fence) …
    expect(store.inQueue('dlq')).toHaveLength(1); // … and the dead-letter row of the first attempt
    expect(store.inQueue('q')).toHaveLength(0);
    expect(followUps).toEqual([c.id]);
    expect(store.calls.release).toEqual([]);
  });

  it('a transient failure before the commit is retried and the move happens once', async () => {
    const store = new MemoryStore();
    const c = await claimOne(store);
    store.deadLetterFaults = ['before', 'before'];
    const followUps: string[] = [];
    expect(await dispatchDelivery(c, failing, deps(store, followUps))).toBe('dead-lettered');
    expect(store.calls.deadLetter).toBe(3);
    expect(store.inQueue('dlq')).toHaveLength(1);
    expect(followUps).toEqual([c.id]);
  });

  it('a move that keeps failing falls back to a NAK: the job stays on its queue, no follow-up', async () => {
    const store = new MemoryStore();
    const c = await claimOne(store);
    store.deadLetterFaults = ['before', 'before', 'before'];
    const followUps: string[] = [];
    expect(await dispatchDelivery(c, failing, deps(store, followUps))).toBe('retried');
    expect(store.inQueue('dlq')).toHaveLength(0);
    expect(store.inQueue('q')).toHaveLength(1);
    expect(store.calls.release.map((r) => r.id)).toEqual([c.id]);
    expect(followUps).toEqual([]);
  });

  it('a stale claim (re-claimed by a peer) is not dead-lettered, and the peer keeps its claim', async () => {
    const store = new MemoryStore();
    const stale = await claimOne(store);
    store.rows.get(stale.id)!.lockedUntil = 0; // the lease lapsed
    const [fresh] = await store.claim('q', 1, 30_000);
    const followUps: string[] = [];
    expect(await dispatchDelivery(stale, failing, deps(store, followUps))).toBe('retried');
    expect(store.inQueue('dlq')).toHaveLength(0);
    expect(store.rows.get(stale.id)!.lockId).toBe(fresh!.lockId);
    expect(followUps).toEqual([]);
  });
});
