// Job priority (issue 16 §4): a claim takes higher priority first, then availability order (available_at, then
// created_at), on every store; the priority stays with the job through NAK, reschedule, dead letter and requeue,
// and the waiting list and the job lookup show it. Topic copies: topics.contract.test.ts. The plan (one ordered index scan, no Sort) is pinned in
// postgres.claim-plan.contract.test.ts; the T-SQL in the SQL Server shape tests.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deadLetterHeaders } from '../../shared/transport/headers';
import { openForDescribe } from '../support/lifecycle';
import { message, sleep } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;
const DLQ = 'prio-dlq';

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] job priority`, () => {
    const h = openForDescribe(() => fixture.create());

    it('a delayed high-priority job, once due, is claimed before older ready jobs; ties go in availability order', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'prio-order';
      const low1 = message(q, { n: 'low1' });
      await h.store.publish([low1]);
      await sleep(5);
      // 3 s: the listing below must run before it is due also on a slow engine (Babelfish's first run of it: ~1 s)
      const high = message(q, { n: 'high' }, { priority: 5, delayMs: 3000 });
      const below = message(q, { n: 'below' }, { priority: -3 });
      await h.store.publish([high, below]);
      await sleep(5);
      const low2 = message(q, { n: 'low2' });
      await h.store.publish([low2]);
      // not due yet: the ready rows go by priority (0 before -3), zeros in availability order
      expect((await h.store.listWaiting({ queue: q, state: 'ready', order: 'oldest', top: 10 })).map((j) => [j.id, j.priority])).toEqual([
        [low1.id, 0],
        [low2.id, 0],
        [below.id, -3],
      ]);
      await sleep(3200);
      const claimed = await h.store.claim(q, 2, LOCK);
      expect(claimed.map((c) => [c.id, c.priority])).toEqual([
        [high.id, 5],
        [low1.id, 0],
      ]);
      expect((await h.store.claim(q, 5, LOCK)).map((c) => c.id)).toEqual([low2.id, below.id]);
    });

    it('one batch of mixed priorities is claimed highest first, publish order within a priority; absent = 0', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'prio-batch';
      const batch = [
        message(q, { i: 0 }),
        message(q, { i: 1 }, { priority: 2 }),
        message(q, { i: 2 }, { priority: -32768 }),
        message(q, { i: 3 }, { priority: 32767 }),
        message(q, { i: 4 }, { priority: 2 }),
        message(q, { i: 5 }, { priority: 0 }),
      ];
      await h.store.publish(batch);
      const claimed = await h.store.claim(q, 10, LOCK);
      expect(claimed.map((c) => c.payloadJson)).toEqual([3, 1, 4, 0, 5, 2].map((i) => `{"i":${i}}`));
      expect(claimed.map((c) => c.priority)).toEqual([32767, 2, 2, 0, 0, -32768]);
    });

    it('a NAK and a reschedule keep the priority: the released job is still claimed before lower ones', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'prio-nak';
      const high = message(q, { n: 'high' }, { priority: 7 });
      await h.store.publish([high]);
      const [c] = await h.store.claim(q, 1, LOCK);
      expect(c?.id).toBe(high.id);
      expect(await h.store.release(c!, 0)).toBe(true);
      await h.store.publish([message(q, { n: 'low' })]); // available later than the released one... and lower
      const [again] = await h.store.claim(q, 1, LOCK);
      expect(again).toMatchObject({ id: high.id, priority: 7, attempt: 2 });
      expect(await h.store.release(again!, 60_000)).toBe(true); // retried later: delayed, priority kept
      expect((await h.store.listWaiting({ queue: q, state: 'delayed', order: 'oldest', top: 5 })).map((j) => [j.id, j.priority])).toEqual([[high.id, 7]]);
      expect(await h.store.reschedule(q, high.id, { delayMs: 0 })).toMatchObject({ outcome: 'rescheduled' });
      expect(await h.store.findJob(high.id, DLQ)).toMatchObject({ id: high.id, state: 'ready', priority: 7 });
      expect((await h.store.claim(q, 1, LOCK))[0]?.id).toBe(high.id);
    });

    it('a dead letter keeps the priority, so a requeue puts the job back at it', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'prio-dead';
      const job = message(q, { n: 'dies' }, { priority: -9 });
      await h.store.publish([job]);
      const [c] = await h.store.claim(q, 1, LOCK);
      const newId = randomUUID();
      expect(
        await h.store.deadLetter({ source: c!, newId, deadLetterQueue: DLQ, payloadJson: c!.payloadJson, headers: deadLetterHeaders(c!.headers, 'boom', q), reason: 'boom' }),
      ).toBe(true);
      expect(await h.store.findJob(newId, DLQ)).toMatchObject({ state: 'dead-lettered', queue: q, priority: -9 });
      expect(await h.store.requeueDeadLetter(DLQ, q, newId)).toBe(true);
      await h.store.publish([message(q, { n: 'zero' })]);
      const waiting = await h.store.listWaiting({ queue: q, state: 'ready', order: 'oldest', top: 5 });
      expect(waiting.map((j) => [j.payloadJson, j.priority])).toEqual([
        ['{"n":"zero"}', 0],
        ['{"n":"dies"}', -9],
      ]);
      expect((await h.store.listWaiting({ queue: q, state: 'ready', order: 'newest', top: 1 }))[0]?.id).toBe(newId);
    });

    it('a limited claim orders the same way', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'prio-limited';
      const low = message(q, { n: 'low' });
      const high = message(q, { n: 'high' }, { priority: 1 });
      await h.store.publish([low, high]);
      const first = await h.store.claimLimited(q, 5, LOCK, randomUUID(), { concurrency: 1 });
      expect(first.messages.map((m) => [m.id, m.priority])).toEqual([[high.id, 1]]);
    });
  });
}
