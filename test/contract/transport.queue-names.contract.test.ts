// The queue names that hold rows (issue 27, item 5): what the queue list adds for queues no route serves. One row per
// distinct queue in name order, bounded, on every store.
import { describe, expect, it } from 'vitest';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { announce, storeFixtures } from './fixtures';

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] queue names with rows`, () => {
    const h = openForDescribe(() => fixture.create());

    it('lists each queue that holds rows once, in name order, at most max', async () => {
      expect(await h.store.queueNames(10)).toEqual([]);
      await h.store.publish([message('zeta'), message('alpha'), message('alpha'), message('mid', 1, { delayMs: 3_600_000 })]);
      expect(await h.store.queueNames(10)).toEqual(['alpha', 'mid', 'zeta']);
      expect(await h.store.queueNames(2)).toEqual(['alpha', 'mid']);
      expect(await h.store.queueNames(0)).toEqual([]);
    });
  });
}
