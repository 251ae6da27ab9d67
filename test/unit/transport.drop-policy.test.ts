// DeadLetterEnabled = false: a job out of attempts (or failed for good, or past the cap) is deleted, fenced on its
// claim, instead of moved to the dead-letter queue; its failure follow-up (the caller's error response) still runs.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { AckBatcher } from '../../shared/transport/ack-batcher';
import { dispatchDelivery, type DispatchDeps } from '../../shared/transport/dispatcher';
import { PermanentJobError } from '../../shared/transport/job';
import type { ClaimedMessage, TransportStore } from '../../shared/transport/types';
import { MemoryStore } from '../support/memory-store';
import { message } from '../support/messages';

function deps(store: MemoryStore, failedFor: string[], deadLetter: boolean, maxDeliveryAttempts = 2): DispatchDeps {
  const s = store as unknown as TransportStore;
  return {
    store: s,
    acks: new AckBatcher((b) => s.ack(b), 16, silentLogger),
    policy: { maxDeliveryAttempts, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0, deadLetter },
    lockTimeoutMs: 30_000,
    deadLetterQueue: 'dlq',
    logger: silentLogger,
    onDeadLettered: async (_job, msg, reason) => void failedFor.push(`${msg.id}: ${reason}`),
  };
}

async function claim(store: MemoryStore): Promise<ClaimedMessage> {
  const [c] = await store.claim('q', 1, 30_000);
  return c!;
}

const failing = async () => {
  throw new Error('target down');
};

describe('drop instead of dead-letter', () => {
  it('retries like any queue, then deletes the row on the last attempt and reports it dropped', async () => {
    const store = new MemoryStore();
    const failedFor: string[] = [];
    await store.publish([message('q', { n: 1 })]);
    expect(await dispatchDelivery(await claim(store), failing, deps(store, failedFor, false))).toBe('retried');
    const last = await claim(store);
    expect(last.attempt).toBe(2);
    expect(await dispatchDelivery(last, failing, deps(store, failedFor, false))).toBe('dropped');
    expect(store.inQueue('q')).toEqual([]);
    expect(store.inQueue('dlq')).toEqual([]);
    expect(store.calls.deadLetter).toBe(0);
    expect(failedFor).toEqual([`${last.id}: target down`]);
  });

  it('drops a permanent failure and a delivery past the cap without a dead letter', async () => {
    const store = new MemoryStore();
    const failedFor: string[] = [];
    await store.publish([message('q', 1)]);
    const permanent = async () => {
      throw new PermanentJobError('never');
    };
    expect(await dispatchDelivery(await claim(store), permanent, deps(store, failedFor, false, 5))).toBe('dropped');
    await store.publish([message('q', 2)]);
    const c = await claim(store);
    expect(await dispatchDelivery({ ...c, attempt: 3 }, failing, deps(store, failedFor, false, 2))).toBe('dropped');
    expect(store.inQueue('q')).toEqual([]);
    expect(store.inQueue('dlq')).toEqual([]);
    expect(failedFor).toHaveLength(2);
  });

  it('a drop whose lease was lost deletes nothing and leaves the row to its new owner', async () => {
    const store = new MemoryStore();
    const failedFor: string[] = [];
    await store.publish([message('q', 1)]);
    const stale = await claim(store);
    const d = deps(store, failedFor, false, 1);
    expect(await dispatchDelivery({ ...stale, lockId: '00000000-0000-0000-0000-000000000000' }, failing, d)).toBe('retried');
    expect(store.inQueue('q')).toHaveLength(1);
    expect(failedFor).toEqual([]);
  });

  it('with dead-lettering on (the default) the same failure is moved to the dead-letter queue', async () => {
    const store = new MemoryStore();
    await store.publish([message('q', 1)]);
    const c = await claim(store);
    const d = deps(store, [], true, 1);
    delete (d.policy as { deadLetter?: boolean }).deadLetter;
    expect(await dispatchDelivery(c, failing, d)).toBe('dead-lettered');
    expect(store.inQueue('dlq')).toHaveLength(1);
  });
});
