// A queue's waiting jobs (GET /api/queues/{queue}/messages, the dashboard): unleased rows of exactly the queue,
// ready (available now on the database clock) or delayed, oldest or newest first by the ready index's order
// (available_at, created_at), at most `top`. Leased rows are not waiting; a lapsed lease is ready again.
import { describe, expect, it } from 'vitest';
import { openForDescribe } from '../support/lifecycle';
import { message, sleep } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';
import type { TransportStore } from '../../shared/transport/types';
import type { WaitingOrder, WaitingState } from '../../shared/transport/waiting';

/** Published one at a time a few ms apart, so available_at and created_at order them on every clock. */
async function publishInOrder(store: TransportStore, queue: string, delaysMs: number[]): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, delayMs] of delaysMs.entries()) {
    const m = message(queue, { n: i }, { delayMs, headers: { 'x-n': String(i) } });
    await store.publish([m]);
    ids.push(m.id);
    await sleep(5);
  }
  return ids;
}

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] waiting jobs`, () => {
    const h = openForDescribe(() => fixture.create());
    const ids = (queue: string, state: WaitingState, order: WaitingOrder, top = 100) =>
      h.store.listWaiting({ queue, state, order, top }).then((items) => items.map((i) => i.id));

    it('ready and delayed are apart, each oldest or newest first by availability', async () => {
      const q = 'waiting-states';
      // r0, r1, r2 ready now; d_late available in 10 min, d_soon in 5 min (published later, available sooner)
      const [r0, dLate, r1, dSoon, r2] = await publishInOrder(h.store, q, [0, 600_000, 0, 300_000, 0]);
      expect(await ids(q, 'ready', 'oldest')).toEqual([r0, r1, r2]);
      expect(await ids(q, 'ready', 'newest')).toEqual([r2, r1, r0]);
      expect(await ids(q, 'delayed', 'oldest')).toEqual([dSoon, dLate]);
      expect(await ids(q, 'delayed', 'newest')).toEqual([dLate, dSoon]);
    });

    it('each item carries the row: payload, headers, attempts, availableAt and createdAt on the database clock', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'openJsonStringValues');
      const q = 'waiting-fields';
      const [ready, delayed] = await publishInOrder(h.store, q, [0, 600_000]);
      const now = (await h.store.now()).getTime();
      const [r] = await h.store.listWaiting({ queue: q, state: 'ready', order: 'oldest', top: 10 });
      expect(r).toMatchObject({ id: ready, payloadJson: '{"n":0}', headers: { 'x-n': '0' }, attempts: 0 });
      expect(r!.availableAt.getTime()).toBeLessThanOrEqual(now);
      expect(r!.createdAt.getTime()).toBeLessThanOrEqual(now);
      const [d] = await h.store.listWaiting({ queue: q, state: 'delayed', order: 'oldest', top: 10 });
      expect(d).toMatchObject({ id: delayed, payloadJson: '{"n":1}', headers: { 'x-n': '1' }, attempts: 0 });
      expect(d!.availableAt.getTime()).toBeGreaterThan(now + 590_000);
      expect(d!.availableAt.getTime()).toBeLessThanOrEqual(now + 600_000);
    });

    it('top bounds the page from the chosen end; exactly the queue (no near-miss names)', async () => {
      const q = 'waiting-top';
      const [a, b, c] = await publishInOrder(h.store, q, [0, 0, 0]);
      expect(await ids(q, 'ready', 'oldest', 2)).toEqual([a, b]);
      expect(await ids(q, 'ready', 'newest', 1)).toEqual([c]);
      expect(await ids(q, 'ready', 'oldest', 0)).toEqual([]);
      expect(await ids(`${q} `, 'ready', 'oldest')).toEqual([]);
      expect(await ids(q.toUpperCase(), 'ready', 'oldest')).toEqual([]);
      expect(await ids('waiting-nothing', 'delayed', 'newest')).toEqual([]);
    });

    it('a leased row is not waiting; released it is delayed with its attempt; a lapsed lease is ready again', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'waiting-leased';
      const [a, b, c] = await publishInOrder(h.store, q, [0, 0, 0]);
      const [claimedA] = await h.store.claim(q, 1, 60_000);
      expect(claimedA?.id).toBe(a);
      expect(await ids(q, 'ready', 'oldest')).toEqual([b, c]);
      expect(await ids(q, 'delayed', 'oldest')).toEqual([]);
      expect(await h.store.release(claimedA!, 600_000)).toBe(true);
      const delayed = await h.store.listWaiting({ queue: q, state: 'delayed', order: 'oldest', top: 10 });
      expect(delayed.map((d) => [d.id, d.attempts])).toEqual([[a, 1]]);
      const [claimedB] = await h.store.claim(q, 1, 60_000);
      expect(claimedB?.id).toBe(b);
      expect(await ids(q, 'ready', 'oldest')).toEqual([c]);
      await h.raw.expireLease(b!); // its owner crashed and the lease ran out: claimable, so waiting
      expect(await ids(q, 'ready', 'oldest')).toEqual([b, c]);
    });
  });
}
