import { afterEach, describe, expect, it } from 'vitest';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures, type Harness } from './fixtures';

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] schema creation and verification`, () => {
    let h: Harness | undefined;
    afterEach(async () => {
      await h?.close();
      h = undefined;
    });

    it('AutoCreateSchema=false on an absent table fails with the fix, and is re-checked once the table exists', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'catalogViews');
      h = await fixture.create({ autoCreateSchema: false });
      await expect(h.store.publish([message('w')])).rejects.toThrow(/does not exist.*npm run schema -- apply/s);
      const creator = await h.openWith({ autoCreateSchema: true });
      await creator.ensureSchema();
      const [outcome] = await h.store.publish([message('w')]);
      expect(outcome!.inserted).toBe(true);
    });

    it('concurrent first operations share one schema attempt and all succeed', async () => {
      h = await fixture.create();
      const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => h!.store.publish([message('conc', i)])));
      expect(outcomes.flat().every((o) => o.inserted)).toBe(true);
      expect(await h.raw.countQueue('conc')).toBe(8);
    });

    it('a table with the wrong shape is rejected naming the column, what was expected and what was found', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'catalogViews');
      h = await fixture.create({ autoCreateSchema: false });
      await h.raw.createMisshapenTable();
      const error = await h.store.ensureSchema().then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error?.message).toMatch(/payload_json/);
      expect(error?.message).toMatch(/expected/);
      expect(error?.message).toMatch(/found/);
      // in that order, about that column: what it should be, then the narrower type it has
      expect(error?.message).toMatch(/column 'payload_json' of [^:]+: expected (text|nvarchar\(max\)) NOT NULL; found (character varying|nvarchar\(200\)) NOT NULL/);
    });
  });
}
