// The claim-outlook probe (queue mode asks it after a drain and at start-up): due when a row of exactly the queue
// is claimable (ready, or its lease lapsed), else the ms until the earliest live lease lapses, on the database
// clock. Delayed rows, other queues and dead letters never count.
import { describe, expect, it } from 'vitest';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] claim outlook`, () => {
    const h = openForDescribe(() => fixture.create());

    it('an empty queue: nothing due, no lease', async () => {
      expect(await h.store.claimOutlook('outlook-empty')).toEqual({ due: false, leaseLapsesInMs: null });
    });

    it('a ready row is due; a delayed one, another queue and a near-miss queue name are not', async () => {
      await h.store.publish([{ ...message('outlook-delayed'), delayMs: 600_000 }]);
      await h.store.publish([message('outlook-ready')]);
      expect(await h.store.claimOutlook('outlook-delayed')).toEqual({ due: false, leaseLapsesInMs: null });
      expect(await h.store.claimOutlook('outlook-ready')).toEqual({ due: true, leaseLapsesInMs: null });
      expect(await h.store.claimOutlook('outlook-ready ')).toEqual({ due: false, leaseLapsesInMs: null }); // exact match
      expect(await h.store.claimOutlook('OUTLOOK-READY')).toEqual({ due: false, leaseLapsesInMs: null });
    });

    it('leased rows only: when the earliest lease lapses; a lapsed lease is due', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'outlook-leased';
      await h.store.publish([message(q)]);
      await h.store.publish([message(q)]);
      const [long] = await h.store.claim(q, 1, 60_000);
      const [short] = await h.store.claim(q, 1, 20_000);
      const o = await h.store.claimOutlook(q);
      expect(o.due).toBe(false);
      expect(o.leaseLapsesInMs).toBeGreaterThan(15_000); // the 20 s lease, less the round trips
      expect(o.leaseLapsesInMs).toBeLessThanOrEqual(20_000);
      await h.store.ack([short!]);
      expect((await h.store.claimOutlook(q)).leaseLapsesInMs).toBeGreaterThan(55_000); // now the 60 s one
      await h.raw.expireLease(long!.id); // its owner crashed and the lease ran out
      expect(await h.store.claimOutlook(q)).toEqual({ due: true, leaseLapsesInMs: null });
      const [again] = await h.store.claim(q, 1, 30_000); // what the probe called due, the claim takes
      expect(again?.id).toBe(long!.id);
    });
  });
}
