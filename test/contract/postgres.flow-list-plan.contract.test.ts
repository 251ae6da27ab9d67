// Listing flow runs by status reads the list index (status, updated_at_utc, flow_id) backwards, newest first,
// and stops at the page size: it never reads or sorts the whole flow state table.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import type { OpenedStores } from '../../shared/stores/open';
import { flowListStatement } from '../../shared/stores/postgres/flow-statements';
import { DEFAULT_FLOW_STATE_TABLE, schemaNames } from '../../shared/stores/schema-names';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';
import { nodes, type PlanNode } from './plan-nodes';

afterAll(() => closeSharedPglite());


for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] flow list plan`, { timeout: 180_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });

    it('with 20k runs (after ANALYZE) listing by status reads the list index, no sequential scan, no sort', async (ctx) => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      const names = schemaNames(transportNames(d.schema, 'asyncresponse_transport_messages', 'postgres'), channelNames(d.schema, DEFAULT_CHANNEL_TABLES, 'postgres'), 'postgres');
      const t = `"${d.schema}"."${DEFAULT_FLOW_STATE_TABLE}"`;
      await d.client.query(
        `INSERT INTO ${t} (flow_id, flow_name, status, state_json, updated_at_utc, expires_at_utc)
         SELECT 'run-' || g, 'f' || (g % 3), (ARRAY['Running','Succeeded','Failed','Suspended'])[1 + g % 4], '{}',
                clock_timestamp() - g * interval '1 second', clock_timestamp() + interval '1 day'
         FROM generate_series(1, 20000) AS g`,
      );
      await d.client.query(`ANALYZE ${t}`);
      const text = flowListStatement(names, { status: 'Failed' });
      const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, [50, 'Failed']);
      const plan = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
      const shown = plan.map((n) => `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`).join(', ');
      if (fixture.name === 'pglite' && plan.some((n) => n['Node Type'] === 'Seq Scan')) {
        console.log(`[pglite] flow list plan check skipped: its planner chose ${shown}`);
        ctx.skip();
      }
      expect(plan.some((n) => n['Node Type'] === 'Seq Scan'), shown).toBe(false);
      expect(plan.some((n) => n['Node Type'] === 'Sort'), shown).toBe(false);
      expect(plan.some((n) => n['Index Name'] === names.flowStateListIndex), shown).toBe(true);
      // and the page is the newest 50 Failed runs (g = 2, 6, 10, …: status index 1 + g % 4 = 3)
      const page = await stores.flows.list({ status: 'Failed', limit: 50 });
      expect(page.items.map((i) => i.flowId)).toEqual(Array.from({ length: 50 }, (_, i) => `run-${2 + 4 * i}`));
      expect(page.cursor).toBeDefined();
    });
  });
}
