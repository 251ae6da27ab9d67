// The publisher after a lost answer: a retry finds the earlier attempt's row. With an id the app generated that
// row can only be this publish's own, so it reports inserted; with the caller's id it stays a duplicate.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { retryPolicy } from '../../shared/sql/retry';
import { Publisher } from '../../shared/transport/publisher';
import type { TransportStore } from '../../shared/transport/types';
import { WakeSignal } from '../../shared/transport/wake';
import { MemoryStore } from '../support/memory-store';
import { message } from '../support/messages';

const fast = { baseMs: 1, maxMs: 2 };
const publisherFor = (store: MemoryStore, wake = new WakeSignal()) =>
  new Publisher(store as unknown as TransportStore, wake, { maxAttempts: 3, classes: retryPolicy({ lock: fast, throttling: fast, failover: fast, connection: fast }) }, silentLogger);

describe('publisher after a commit whose answer was lost', () => {
  it('reports a generated id as inserted (and wakes its queue); the job exists once', async () => {
    const store = new MemoryStore();
    store.publishFaults = ['after'];
    const wake = new WakeSignal();
    const m = { ...message('q', 1), generatedId: true };
    const [outcome] = await publisherFor(store, wake).publish([m]);
    expect(outcome).toMatchObject({ id: m.id, inserted: true });
    expect(store.inQueue('q')).toHaveLength(1);
    expect(await wake.wait('q', 0)).toBe(true); // the pending wake of the insert
  });

  it("logs its retries to the caller's (invocation) logger when given one", async () => {
    const store = new MemoryStore();
    store.publishFaults = ['before'];
    const warnings: string[] = [];
    const invocation = { ...silentLogger, warn: (m: string) => void warnings.push(m) };
    await publisherFor(store).publish([message('q', 1)], undefined, undefined, invocation);
    expect(warnings).toEqual([expect.stringMatching(/^publish attempt 1 failed transiently \(connection\); retrying in \d+ ms with the same ids$/)]);
  });

  it("keeps a caller's id a duplicate: someone else may have published it", async () => {
    const store = new MemoryStore();
    store.publishFaults = ['after'];
    const m = message('q', 1);
    const [outcome] = await publisherFor(store).publish([m]);
    expect(outcome).toMatchObject({ id: m.id, inserted: false, existingQueue: 'q' });
  });

  it('keeps a generated id that turns up on another queue after a retry a duplicate (not this publish\'s row)', async () => {
    const store = new MemoryStore();
    const m = { ...message('q', 1), generatedId: true };
    await store.publish([{ ...m, queue: 'elsewhere' }]);
    store.publishFaults = ['before'];
    const [outcome] = await publisherFor(store).publish([m]);
    expect(outcome).toMatchObject({ inserted: false, existingQueue: 'elsewhere' });
  });

  it('reports a real duplicate of a generated id without a retry as a duplicate', async () => {
    const store = new MemoryStore();
    const m = { ...message('q', 1), generatedId: true };
    await store.publish([m]);
    const [outcome] = await publisherFor(store).publish([m]);
    expect(outcome).toMatchObject({ inserted: false });
  });

  it("a generated id's retry that finds its dedup key held by another job keeps that answer a duplicate", async () => {
    const holder = '0190ca46-76ab-7e35-8c8b-f45638963c75';
    let calls = 0;
    const store = {
      kind: 'postgres',
      publish: async () => {
        if (++calls === 1) throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
        return [{ id: holder, inserted: false, availableAt: null, existingQueue: 'q' }];
      },
    } as unknown as TransportStore;
    const wake = new WakeSignal();
    const m = { ...message('q', 1, { dedup: { key: 'k', windowMs: 1000, mode: 'drop' } }), generatedId: true };
    const publisher = new Publisher(store, wake, { maxAttempts: 3, classes: retryPolicy({ lock: fast, throttling: fast, failover: fast, connection: fast }) }, silentLogger);
    expect(await publisher.publish([m])).toEqual([{ id: holder, inserted: false, availableAt: null, existingQueue: 'q' }]);
    expect(calls).toBe(2);
    expect(await wake.wait('q', 0)).toBe(false); // nothing new to claim
  });

  it('a debounce that made its job due now wakes the queue', async () => {
    const store = { kind: 'postgres', publish: async () => [{ id: 'x', inserted: false, debounced: true, availableAt: new Date(), existingQueue: 'q' }] } as unknown as TransportStore;
    const wake = new WakeSignal();
    await new Publisher(store, wake, { maxAttempts: 1 }, silentLogger).publish([message('q', 1, { dedup: { key: 'k', windowMs: 1000, mode: 'debounce' } })]);
    expect(await wake.wait('q', 0)).toBe(true);
  });
});
