// Dedup keys with a window and debounce on every store (issue 16 §3; rules in shared/transport/dedup.ts): a held
// key answers its job and enqueues nothing, the key is held for its whole window (completed or not) and free after
// it, debounce replaces a waiting job and enqueues a new one once the holder was claimed, and concurrent publishers
// of one key make exactly one job (PostgreSQL server: real sessions).

import { describe, expect, it } from 'vitest';
import type { DedupSpec, OutgoingMessage, TransportStore } from '../../shared/transport/types';
import { openForDescribe } from '../support/lifecycle';
import { message, sleep } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;
const HOUR = 3_600_000;
const keyed = (queue: string, dedup: Partial<DedupSpec> & { key: string }, payload: unknown = { n: 1 }, extra: Partial<OutgoingMessage> = {}) =>
  message(queue, payload, { dedup: { windowMs: HOUR, mode: 'drop', ...dedup }, ...extra });

async function waitingJobs(store: TransportStore, queue: string) {
  return [...(await store.listWaiting({ queue, state: 'ready', order: 'oldest', top: 10 })), ...(await store.listWaiting({ queue, state: 'delayed', order: 'oldest', top: 10 }))];
}

async function payloadOf(store: TransportStore, queue: string): Promise<unknown[]> {
  return (await waitingJobs(store, queue)).map((j) => JSON.parse(j.payloadJson));
}

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] dedup keys and debounce`, () => {
    const h = openForDescribe(() => fixture.create());

    it('a second publish with a held key enqueues nothing and answers the holder; other keys and queues are apart', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'openJsonStringValues');
      const first = keyed('d-drop', { key: 'order-1' });
      const [a] = await h.store.publish([first]);
      expect(a).toMatchObject({ id: first.id, inserted: true });
      const second = keyed('d-drop', { key: 'order-1' }, { n: 2 });
      const [b] = await h.store.publish([second]);
      expect(b).toEqual({ id: first.id, inserted: false, availableAt: a!.availableAt, existingQueue: 'd-drop' });
      const [other] = await h.store.publish([keyed('d-drop', { key: 'order-2' })]);
      const [elsewhere] = await h.store.publish([keyed('d-drop-other', { key: 'order-1' })]);
      // keys compare exactly: case and a trailing space make another key
      const [upper] = await h.store.publish([keyed('d-drop', { key: 'ORDER-1' })]);
      const [spaced] = await h.store.publish([keyed('d-drop', { key: 'order-1 ' })]);
      expect([other!.inserted, elsewhere!.inserted, upper!.inserted, spaced!.inserted]).toEqual([true, true, true, true]);
      expect(await h.raw.countQueue('d-drop')).toBe(4);
      expect(await payloadOf(h.store, 'd-drop')).toContainEqual({ n: 1 });
      expect(await payloadOf(h.store, 'd-drop')).not.toContainEqual({ n: 2 });
    });

    it('the key is held for its whole window, also once its job has completed (the answer then has no row)', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const first = keyed('d-done', { key: 'k' });
      await h.store.publish([first]);
      const [c] = await h.store.claim('d-done', 1, LOCK);
      expect(await h.store.ack([c!])).toBe(1);
      const [again] = await h.store.publish([keyed('d-done', { key: 'k' })]);
      expect(again).toEqual({ id: first.id, inserted: false, availableAt: null });
      expect(await h.raw.countQueue('d-done')).toBe(0);
    });

    it('after the window ends the key is free: the next publish enqueues and holds it anew', async () => {
      // a window of 1 s: the second publish must land inside it also on a slow engine (Babelfish under load: ~0.2 s)
      const first = keyed('d-window', { key: 'k', windowMs: 1000 });
      await h.store.publish([first]);
      const [inside] = await h.store.publish([keyed('d-window', { key: 'k', windowMs: 1000 })]);
      expect(inside).toMatchObject({ id: first.id, inserted: false });
      await sleep(1150);
      const later = keyed('d-window', { key: 'k', windowMs: HOUR });
      const [after] = await h.store.publish([later]);
      expect(after).toMatchObject({ id: later.id, inserted: true });
      const [held] = await h.store.publish([keyed('d-window', { key: 'k' })]);
      expect(held).toMatchObject({ id: later.id, inserted: false });
      expect(await h.raw.countQueue('d-window')).toBe(2);
    });

    it('debounce: a waiting holder takes the new payload and headers and is due after the new delay', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'openJsonStringValues');
      const first = keyed('d-debounce', { key: 'k', mode: 'debounce' }, { v: 1 }, { delayMs: 60_000, headers: { h: '1' } });
      const [a] = await h.store.publish([first]);
      const second = keyed('d-debounce', { key: 'k', mode: 'debounce' }, { v: 2 }, { delayMs: 120_000, headers: { h: '2' } });
      const [b] = await h.store.publish([second]);
      expect(b).toMatchObject({ id: first.id, inserted: false, debounced: true, existingQueue: 'd-debounce' });
      expect(b!.availableAt!.getTime() - a!.availableAt!.getTime()).toBeGreaterThan(50_000);
      const waiting = await waitingJobs(h.store, 'd-debounce');
      expect(waiting.map((j) => [j.id, JSON.parse(j.payloadJson), j.headers.h])).toEqual([[first.id, { v: 2 }, '2']]);
      // due now: claimable at once
      const [now] = await h.store.publish([keyed('d-debounce', { key: 'k', mode: 'debounce' }, { v: 3 })]);
      expect(now).toMatchObject({ id: first.id, debounced: true });
      const [c] = await h.store.claim('d-debounce', 5, LOCK);
      expect(JSON.parse(c!.payloadJson)).toEqual({ v: 3 });
      await h.store.ack([c!]);
    });

    it('debounce: once the holder was claimed (or is gone) a new job is enqueued and takes the key', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const first = keyed('d-claimed', { key: 'k', mode: 'debounce' }, { v: 1 });
      await h.store.publish([first]);
      const [c] = await h.store.claim('d-claimed', 1, LOCK);
      const second = keyed('d-claimed', { key: 'k', mode: 'debounce' }, { v: 2 });
      const [b] = await h.store.publish([second]);
      expect(b).toMatchObject({ id: second.id, inserted: true });
      expect(b!.debounced).toBeUndefined();
      expect(JSON.parse(c!.payloadJson)).toEqual({ v: 1 }); // the running job keeps its payload
      const [d] = await h.store.publish([keyed('d-claimed', { key: 'k', mode: 'debounce' }, { v: 3 })]);
      expect(d).toMatchObject({ id: second.id, debounced: true });
      await h.store.ack([c!]);
      const [e] = await h.store.claim('d-claimed', 1, LOCK);
      await h.store.ack([e!]);
      const third = keyed('d-claimed', { key: 'k', mode: 'debounce' }, { v: 4 });
      expect((await h.store.publish([third]))[0]).toMatchObject({ id: third.id, inserted: true }); // holder gone
    });

    it('a key twice in one batch acts as two publishes in order; unkeyed messages of the batch insert as usual', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'openJsonStringValues');
      const a = keyed('d-batch', { key: 'k' }, { v: 1 });
      const b = keyed('d-batch', { key: 'k' }, { v: 2 });
      const plain = message('d-batch', { v: 3 });
      const c = keyed('d-batch', { key: 'j', mode: 'debounce' }, { v: 4 }, { delayMs: 60_000 });
      const d = keyed('d-batch', { key: 'j', mode: 'debounce' }, { v: 5 }, { delayMs: 60_000 });
      const out = await h.store.publish([a, b, plain, c, d]);
      expect(out.map((o) => [o.id, o.inserted, o.debounced ?? false])).toEqual([
        [a.id, true, false],
        [a.id, false, false],
        [plain.id, true, false],
        [c.id, true, false],
        [c.id, false, true],
      ]);
      expect(await h.raw.countQueue('d-batch')).toBe(3);
      expect(await payloadOf(h.store, 'd-batch')).toEqual(expect.arrayContaining([{ v: 1 }, { v: 3 }, { v: 5 }]));
    });

    it('a republish with the same id and key (a retry after a lost answer) answers its own job', async () => {
      const m = keyed('d-retry', { key: 'k' });
      await h.store.publish([m]);
      const [again] = await h.store.publish([m]);
      expect(again).toMatchObject({ id: m.id, inserted: false, existingQueue: 'd-retry' });
      expect(await h.raw.countQueue('d-retry')).toBe(1);
    });

    it("an id that is another queue's job enqueues nothing and does not take the key", async () => {
      const elsewhere = message('d-ids-other');
      await h.store.publish([elsewhere]);
      const [clash] = await h.store.publish([keyed('d-ids', { key: 'k' }, 1, { id: elsewhere.id })]);
      expect(clash).toMatchObject({ id: elsewhere.id, inserted: false, existingQueue: 'd-ids-other' });
      const next = keyed('d-ids', { key: 'k' });
      expect((await h.store.publish([next]))[0]).toMatchObject({ id: next.id, inserted: true });
    });

    it('the prune deletes keys whose window ended and keeps held ones', async () => {
      await h.store.publish([keyed('d-prune', { key: 'short-1', windowMs: 200 }), keyed('d-prune', { key: 'short-2', windowMs: 200 }), keyed('d-prune', { key: 'long' })]);
      await sleep(300);
      expect(await h.store.pruneDedupKeys()).toBeGreaterThanOrEqual(2);
      expect(await h.store.pruneDedupKeys()).toBe(0);
      expect((await h.store.publish([keyed('d-prune', { key: 'long' })]))[0]!.inserted).toBe(false);
      expect((await h.store.publish([keyed('d-prune', { key: 'short-1' })]))[0]!.inserted).toBe(true);
    });

    it.skipIf(!fixture.concurrent)('concurrent publishers of one key, on separate sessions, make exactly one job', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'indexNames'); // the peers' schema attempts on one table
      // peers are the harness's (each on its own pool of 4 sessions), closed with it
      const peers = [h.store, await h.openPeer(), await h.openPeer(), await h.openPeer()];
      for (const mode of ['drop', 'debounce'] as const) {
        const queue = `d-race-${mode}`;
        const publishes = Array.from({ length: 24 }, (_, i) => keyed(queue, { key: 'one', mode }, { i }, { delayMs: 60_000 }));
        const outcomes = (await Promise.all(publishes.map((m, i) => peers[i % peers.length]!.publish([m])))).flat();
        const inserted = outcomes.filter((o) => o.inserted);
        expect(inserted, mode).toHaveLength(1);
        expect(new Set(outcomes.map((o) => o.id)), mode).toEqual(new Set([inserted[0]!.id]));
        expect(await h.raw.countQueue(queue), mode).toBe(1);
        if (mode === 'debounce') expect(outcomes.filter((o) => o.debounced)).toHaveLength(23);
      }
    });
  });
}
