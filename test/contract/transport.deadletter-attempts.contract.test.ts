import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deadLetterHeaders } from '../../shared/transport/headers';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] dead-letter attempts`, () => {
    const h = openForDescribe(() => fixture.create());

    /** Claims `deliveries` times (NAKing all but the last), then moves the last claim to `dlq`. */
    async function buryAfter(queue: string, dlq: string, deliveries: number, id?: string) {
      if (!id) {
        const m = message(queue);
        await h.store.publish([m]);
        id = m.id;
      }
      for (let i = 1; i < deliveries; i++) await h.store.release((await h.store.claim(queue, 1, LOCK))[0]!, 0);
      const [c] = await h.store.claim(queue, 1, LOCK);
      expect(c!.attempt).toBe(deliveries);
      const moved = await h.store.deadLetter({ source: c!, newId: c!.id, deadLetterQueue: dlq, payloadJson: c!.payloadJson, headers: deadLetterHeaders(c!.headers, 'no', queue), reason: 'no' });
      expect(moved).toBe(true);
      return id;
    }

    it('a dead letter keeps the deliveries its job had; a requeued one starts again from zero', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const three = await buryAfter('att', 'att_dlq', 3);
      const one = await buryAfter('att', 'att_dlq', 1);
      const listed = await h.store.listDeadLetters('att_dlq', 'att', 10);
      expect(Object.fromEntries(listed.map((d) => [d.id, d.attempts]))).toEqual({ [three]: 3, [one]: 1 });

      expect(await h.store.requeueDeadLetter('att_dlq', 'att', three)).toBe(true);
      await buryAfter('att', 'att_dlq', 2, three);
      const again = await h.store.listDeadLetters('att_dlq', 'att', 10);
      expect(again.find((d) => d.id === three)!.attempts).toBe(2);
    });

    it('a stale move (the fence no longer matches) writes no dead letter', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('att_stale');
      await h.store.publish([m]);
      const [c] = await h.store.claim('att_stale', 1, LOCK);
      await h.store.release(c!, 0);
      await h.store.claim('att_stale', 1, LOCK); // another lock_id now
      const moved = await h.store.deadLetter({ source: c!, newId: c!.id, deadLetterQueue: 'att_stale_dlq', payloadJson: c!.payloadJson, headers: {}, reason: 'late' });
      expect(moved).toBe(false);
      expect(await h.store.listDeadLetters('att_stale_dlq', 'att_stale', 10)).toEqual([]);
    });

    it('a dead letter written without attempts (another host, an older version) lists them as unknown', async () => {
      await h.store.ensureSchema(); // the table, also when this test runs first
      const id = randomUUID();
      await h.raw.insert(id, 'att_raw_dlq', '{"AR-DeadLetter-Source-Queue":"att_raw","AR-DeadLetter-Reason":"x"}');
      const [dead] = await h.store.listDeadLetters('att_raw_dlq', 'att_raw', 10);
      expect(dead).toMatchObject({ id, attempts: null });
    });
  });
}
