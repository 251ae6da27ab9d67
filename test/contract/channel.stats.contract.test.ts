import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openForDescribe } from '../support/lifecycle';
import { sleep } from '../support/messages';
import { channelFixtures } from './channel-fixtures';
import { skipOnGap } from './engine-gaps';
import { announce } from './fixtures';

const HOUR = 3_600_000;

// Each describe has its own schema, so the counts start at zero.
for (const fixture of channelFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] channel statistics`, () => {
    const h = openForDescribe(() => fixture.create());

    it('counts unexpired responses, live waiters and registrations; expired rows are not counted', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      expect(await h.store.channelStats()).toEqual({ storedResponses: 0, liveWaiters: 0, registrations: 0 });

      for (let i = 0; i < 3; i++) await h.store.insertMessage(randomUUID(), `stats-${i}`, '{}', HOUR);
      await h.store.insertMessage(randomUUID(), 'stats-expiring', '{}', 1);
      await h.store.upsertSubscriber('stats-0', randomUUID(), 'instance-a', HOUR);
      await h.store.upsertSubscriber('stats-1', randomUUID(), 'instance-a', HOUR);
      await h.store.upsertSubscriber('stats-2', randomUUID(), 'instance-b', 1);
      await h.store.saveRegistration('stats-0', randomUUID(), '{}', HOUR, 32);
      await h.store.saveRegistration('stats-expiring', randomUUID(), '{}', 1, 32);
      // acknowledged and recovery-claimed responses are still stored (a later waiter may still read them)
      const [first] = await h.store.loadPending('stats-0', { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' }, 1);
      expect(await h.store.claimForDelivery(first!.id, { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' })).toBe(true);
      await sleep(20); // the 1 ms rows expire

      expect(await h.store.channelStats()).toEqual({ storedResponses: 3, liveWaiters: 2, registrations: 1 });
    });

    it('deleting a waiter and a registration lowers the counts', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const before = await h.store.channelStats();
      const waiter = randomUUID();
      const registration = randomUUID();
      await h.store.upsertSubscriber('stats-del', waiter, 'instance-a', HOUR);
      await h.store.saveRegistration('stats-del', registration, '{}', HOUR, 32);
      expect(await h.store.channelStats()).toEqual({ ...before, liveWaiters: before.liveWaiters + 1, registrations: before.registrations + 1 });
      await h.store.deleteSubscriber('stats-del', waiter);
      expect(await h.store.deleteRegistration('stats-del', registration)).toBe(true);
      expect(await h.store.channelStats()).toEqual(before);
    });
  });
}
