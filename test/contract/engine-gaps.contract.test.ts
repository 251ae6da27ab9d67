// The named differences of the T-SQL engine behind MSSQL_CONNECTION_STRING (engine-gaps.ts), each shown by its
// probe: on SQL Server every probe gives SQL Server's outcome; on Babelfish every listed gap still holds (a gap
// that went away fails here, so the list stays as short as the truth).
import { describe, expect, it } from 'vitest';
import { ENGINE_GAPS, ENGINE_SHIMS, gapsOf, shimmedGapsOf, tdsEngine, type EngineGapId } from './engine-gaps';
import { announce, MSSQL_SKIP_REASON } from './fixtures';

describe.skipIf(!announce({ name: 'sqlserver', skipReason: MSSQL_SKIP_REASON }))('[sqlserver] engine gaps', { timeout: 60_000 }, () => {
  for (const id of Object.keys(ENGINE_GAPS) as EngineGapId[]) {
    it(`${id}: the probe gives the outcome the gap list says for the connected engine`, async () => {
      const engine = await tdsEngine();
      const gap = ENGINE_GAPS[id];
      const listed = engine !== undefined && gapsOf(engine).includes(id);
      const outcome = await gap.probe(process.env.MSSQL_CONNECTION_STRING!);
      expect(outcome).toBe(listed ? gap.babelfish : gap.sqlServer);
    });
  }
  for (const id of Object.keys(ENGINE_SHIMS) as EngineGapId[]) {
    it(`${id}: where the harness shims it, the rewritten construct gives SQL Server's outcome on the connected engine`, async (ctx) => {
      const engine = await tdsEngine();
      if (!engine || !shimmedGapsOf(engine).includes(id)) ctx.skip(`the harness does not shim '${id}' on ${engine ?? 'this engine'}`);
      const shim = ENGINE_SHIMS[id]!;
      expect(await shim.probe(process.env.MSSQL_CONNECTION_STRING!)).toBe(shim.sqlServer);
    });
  }
});
