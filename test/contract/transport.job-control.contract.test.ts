// Job and queue control on every store (issue 16 §4): cancel a waiting job, mark a running one (the renewal learns
// of it), reschedule a waiting job, pause and resume a queue's claims.

import { describe, expect, it } from 'vitest';
import { CANCEL_REQUESTED_HEADER } from '../../shared/transport/job-control';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] job and queue control`, () => {
    const h = openForDescribe(() => fixture.create());

    it('cancel deletes a ready or delayed job; a second cancel (or another queue) finds nothing', async () => {
      const ready = message('c-wait');
      const delayed = message('c-wait', { n: 2 }, { delayMs: 600_000 });
      await h.store.publish([ready, delayed]);
      expect(await h.store.cancel('c-other', ready.id, false)).toBe('absent');
      expect(await h.store.cancel('c-wait', ready.id, false)).toBe('deleted');
      expect(await h.store.cancel('c-wait', delayed.id, false)).toBe('deleted');
      expect(await h.raw.countQueue('c-wait')).toBe(0);
      expect(await h.store.cancel('c-wait', ready.id, false)).toBe('absent');
    });

    it('a leased job is not deleted; with running it is marked, and only the renewal of its fence says so', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'convertStyle127');
      const m = message('c-run', { n: 1 }, { headers: { keep: 'me' } });
      await h.store.publish([m]);
      const [c] = await h.store.claim('c-run', 1, LOCK);
      expect(await h.store.renew(c!, LOCK)).toBe(true);
      expect(await h.store.cancel('c-run', m.id, false)).toBe('running');
      expect(await h.raw.row(m.id)).toMatchObject({ lockId: c!.lockId });
      expect(await h.store.cancel('c-run', m.id, true)).toBe('cancelling');
      expect(await h.store.cancel('c-run', m.id, true)).toBe('cancelling'); // idempotent
      expect(await h.store.renew(c!, LOCK)).toBe('cancel-requested');
      expect(await h.store.renew({ id: m.id, lockId: '00000000-0000-4000-8000-000000000000' }, LOCK)).toBe(false);
      // the owner died: the next claim carries the marker (and the original headers) so it ends unrun
      await h.raw.expireLease(m.id);
      const [again] = await h.store.claim('c-run', 1, LOCK);
      expect(again!.headers).toMatchObject({ keep: 'me' });
      expect(again!.headers[CANCEL_REQUESTED_HEADER]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
      expect(await h.store.ack([again!])).toBe(1);
    });

    it('the marker is written into any headers text: empty, an object, or garbage', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      for (const [i, headersJson] of ['{}', '{ }', '{"a":"1"}', 'not json'].entries()) {
        const id = `00000000-0000-4000-8000-00000000000${i}`;
        await h.raw.insert(id, 'c-marker', headersJson);
        const [c] = await h.store.claim('c-marker', 1, LOCK);
        expect(await h.store.cancel('c-marker', id, true)).toBe('cancelling');
        expect(await h.store.renew(c!, LOCK)).toBe('cancel-requested');
        await h.raw.expireLease(id);
        const [again] = await h.store.claim('c-marker', 1, LOCK);
        expect(again!.headers[CANCEL_REQUESTED_HEADER], headersJson).toBeDefined();
        if (headersJson.includes('"a"')) expect(again!.headers.a).toBe('1');
        await h.store.ack([again!]);
      }
    });

    it('reschedule moves a waiting job by a delay or to an instant on the database clock; a leased job stays', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('r-wait');
      await h.store.publish([m]);
      const before = await h.store.now();
      const later = await h.store.reschedule('r-wait', m.id, { delayMs: 600_000 });
      expect(later.outcome).toBe('rescheduled');
      const at = (later as { availableAt: Date }).availableAt.getTime();
      expect(at).toBeGreaterThanOrEqual(before.getTime() + 599_000);
      expect(await h.store.claim('r-wait', 1, LOCK)).toHaveLength(0);
      const past = new Date(before.getTime() - 1000);
      const back = await h.store.reschedule('r-wait', m.id, { availableAt: past });
      expect(back).toMatchObject({ outcome: 'rescheduled' });
      expect(Math.abs((back as { availableAt: Date }).availableAt.getTime() - past.getTime())).toBeLessThan(2);
      const [c] = await h.store.claim('r-wait', 1, LOCK);
      expect(c?.id).toBe(m.id);
      expect(await h.store.reschedule('r-wait', m.id, { delayMs: 1000 })).toEqual({ outcome: 'running' });
      expect(await h.store.reschedule('r-wait', '00000000-0000-4000-8000-0000000000ff', { delayMs: 1000 })).toEqual({ outcome: 'absent' });
    });

    it('a lapsed lease counts as waiting: reschedule clears its fence, so the stale owner settles nothing', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('r-lapsed');
      await h.store.publish([m]);
      const [c] = await h.store.claim('r-lapsed', 1, LOCK);
      await h.raw.expireLease(m.id);
      expect((await h.store.reschedule('r-lapsed', m.id, { delayMs: 0 })).outcome).toBe('rescheduled');
      expect(await h.store.ack([c!])).toBe(0);
      expect(await h.raw.row(m.id)).toMatchObject({ lockId: null });
    });

    it('a paused queue claims nothing and is never due; publishes still land; resume makes them claimable', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'merge');
      expect(await h.store.queueState('p-q')).toEqual({ queue: 'p-q', paused: false, pausedAt: null, backoffUntil: null });
      const paused = await h.store.setQueuePaused('p-q', true);
      expect(paused.paused).toBe(true);
      const again = await h.store.setQueuePaused('p-q', true);
      expect(again.pausedAt?.getTime()).toBe(paused.pausedAt?.getTime()); // the first pause's time is kept
      const m = message('p-q');
      const other = message('p-other');
      await h.store.publish([m, other]);
      expect(await h.store.claim('p-q', 10, LOCK)).toHaveLength(0);
      expect((await h.store.claimOutlook('p-q')).due).toBe(false);
      expect(await h.store.claim('p-other', 10, LOCK)).toHaveLength(1); // only that queue
      expect(await h.store.queueState('p-q')).toMatchObject({ paused: true });
      expect(await h.store.setQueuePaused('p-q', false)).toEqual({ queue: 'p-q', paused: false, pausedAt: null });
      expect((await h.store.claimOutlook('p-q')).due).toBe(true);
      const [c] = await h.store.claim('p-q', 10, LOCK);
      expect(c?.id).toBe(m.id);
    });
  });
}
