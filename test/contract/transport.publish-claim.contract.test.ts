import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openForDescribe } from '../support/lifecycle';
import { message, sleep } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] publish and claim`, () => {
    const h = openForDescribe(() => fixture.create());

    it('a duplicate publish (same id) is a no-op that reports the stored row', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('dup');
      const [first] = await h.store.publish([m]);
      const [second] = await h.store.publish([{ ...m, payloadJson: '{"changed":true}' }]);
      expect(first).toMatchObject({ id: m.id, inserted: true });
      expect(second).toMatchObject({ id: m.id, inserted: false });
      expect(second!.availableAt?.getTime()).toBe(first!.availableAt?.getTime());
      const claimed = await h.store.claim('dup', 10, LOCK);
      expect(claimed).toHaveLength(1);
      expect(claimed[0]!.payloadJson).toBe(m.payloadJson);
      expect(second!.existingQueue).toBe('dup');
    });

    it('ids are unique across queues: publishing an id that is on another queue reports that queue and writes nothing', async () => {
      const m = message('home');
      await h.store.publish([m]);
      const [other] = await h.store.publish([{ ...m, queue: 'away' }]);
      expect(other).toMatchObject({ id: m.id, inserted: false, existingQueue: 'home' });
      expect(await h.raw.countQueue('away')).toBe(0);
      expect(await h.raw.countQueue('home')).toBe(1);
    });

    it('a batch publish inserts every new row and reports duplicates inside it', async () => {
      const existing = message('batch');
      await h.store.publish([existing]);
      const fresh = [message('batch', { i: 1 }), message('batch', { i: 2 })];
      const outcomes = await h.store.publish([fresh[0]!, existing, fresh[1]!]);
      expect(outcomes.map((o) => [o.id, o.inserted])).toEqual([
        [fresh[0]!.id, true],
        [existing.id, false],
        [fresh[1]!.id, true],
      ]);
      expect(await h.raw.countQueue('batch')).toBe(3);
    });

    it('a delayed job is invisible until it is due on the database clock', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('delayed', {}, { delayMs: 1500 });
      const [outcome] = await h.store.publish([m]);
      const dbNow = await h.store.now();
      expect(outcome!.availableAt!.getTime() - dbNow.getTime()).toBeGreaterThan(1000);
      expect(await h.store.claim('delayed', 10, LOCK)).toHaveLength(0);
      await sleep(1700);
      const claimed = await h.store.claim('delayed', 10, LOCK);
      expect(claimed.map((c) => c.id)).toEqual([m.id]);
    });

    it('claims in availability order, first delivery is attempt 1, the rows of one claim under one fresh lock id', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const ms = [message('order', 1), message('order', 2), message('order', 3)];
      for (const m of ms) await h.store.publish([m]);
      const claimed = await h.store.claim('order', 2, LOCK);
      expect(claimed.map((c) => c.id)).toEqual([ms[0]!.id, ms[1]!.id]);
      expect(claimed.every((c) => c.attempt === 1)).toBe(true);
      expect(new Set(claimed.map((c) => c.lockId)).size).toBe(1);
      expect(claimed[0]!.lockId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const rest = await h.store.claim('order', 10, LOCK);
      expect(rest.map((c) => c.id)).toEqual([ms[2]!.id]);
      expect(rest[0]!.lockId).not.toBe(claimed[0]!.lockId);
      expect(await h.store.claim('order', 10, LOCK)).toHaveLength(0);
    });

    it('a released (NAKed) row queues by when it became due, behind rows already due', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const a = message('avail', 'a');
      const b = message('avail', 'b');
      await h.store.publish([a]);
      await h.store.publish([b]);
      const [first] = await h.store.claim('avail', 1, LOCK);
      expect(first!.id).toBe(a.id);
      await h.store.release(first!, 0);
      const next = await h.store.claim('avail', 2, LOCK);
      expect(next.map((c) => c.id)).toEqual([b.id, a.id]);
    });

    it('padded and case-folded queue rows are never claimed and never starve the rows behind them', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const padded = randomUUID();
      const folded = randomUUID();
      await h.raw.insert(padded, 'exact ');
      await h.raw.insert(folded, 'EXACT');
      const ms = [message('exact', 1), message('exact', 2)];
      for (const m of ms) await h.store.publish([m]);
      const [one] = await h.store.claim('exact', 1, LOCK);
      expect(one!.id).toBe(ms[0]!.id);
      const more = await h.store.claim('exact', 5, LOCK);
      expect(more.map((c) => c.id)).toEqual([ms[1]!.id]);
      expect(await h.store.claim('exact', 5, LOCK)).toHaveLength(0);
      for (const id of [padded, folded]) {
        expect(await h.raw.row(id)).toMatchObject({ attempts: 0, lockId: null });
      }
    });

    it('headers and payload round-trip; the claim reports them as stored', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const payload = { text: 'héllo \u{1F600}', nested: { a: [1, 2, 3] }, nul: 'a\u0000b' };
      const m = message('roundtrip', payload, { headers: { 'AR-Correlation-Id': 'c-1', custom: 'v' } });
      await h.store.publish([m]);
      const [c] = await h.store.claim('roundtrip', 1, LOCK);
      expect(JSON.parse(c!.payloadJson)).toEqual(payload);
      expect(c!.headers).toEqual({ 'AR-Correlation-Id': 'c-1', custom: 'v' });
      expect(c!.queue).toBe('roundtrip');
    });
  });
}
