import { randomUUID } from 'node:crypto';
// The PostgreSQL claim touches only the rows it claims: the ids picked under FOR UPDATE SKIP LOCKED reach the
// UPDATE as an array probed through the primary key. Written as a join to a CTE, the planner hashed the CTE and
// read the whole table on every claim once the table held some thousands of rows (a Seq Scan per claim: the drain
// slowed down as the backlog grew).
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { OpenedStores } from '../../shared/stores/open';
import { pgStatements } from '../../shared/stores/postgres/statements';
import { pgLimitStatements } from '../../shared/stores/postgres/limit-statements';
import { transportNames } from '../../shared/sql/identifiers';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';
import { describeNode, nodes, type PlanNode } from './plan-nodes';

afterAll(() => closeSharedPglite());

const TABLE = 'asyncresponse_transport_messages';


for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] claim plan`, { timeout: 180_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });
    /** A migrated schema whose transport table holds `rows` rows (`queueOf` SQL names each row's queue), analyzed. */
    const seeded = async (rows: number, queueOf = "'work'") => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      const t = `"${d.schema}"."${TABLE}"`;
      await d.client.query(
        `INSERT INTO ${t} (id, queue, payload_json, headers_json) SELECT gen_random_uuid(), ${queueOf}, '{"n":' || g || '}', '{}' FROM generate_series(1, ${rows}) AS g`,
      );
      await d.client.query(`ANALYZE ${t}`);
      return { d, stores, t, names: transportNames(d.schema, TABLE, 'postgres') };
    };

    it('with 20k ready rows (after ANALYZE) a claim reads the claim index and the primary key, never the whole table', async (ctx) => {
      const { d, stores, names } = await seeded(20_000);
      const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${pgStatements(names).claim}`, ['work', 100, 30_000, randomUUID()]);
      const plan = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
      const scans = plan.filter((n) => n['Relation Name'] === TABLE).map((n) => `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`);
      if (fixture.name === 'pglite' && scans.some((s) => s.startsWith('Seq Scan'))) {
        console.log(`[pglite] claim plan check skipped: its planner chose ${scans.join(', ')}`);
        ctx.skip();
      }
      expect(scans.some((s) => s.startsWith('Seq Scan')), scans.join(', ')).toBe(false);
      expect(scans.some((s) => s.includes(names.claimIndex)), scans.join(', ')).toBe(true);
      // and it claims what it should: 100 rows in availability order
      const claimed = await stores.transport.claim('work', 100, 30_000);
      expect(claimed).toHaveLength(100);
      expect(claimed.map((c) => c.payloadJson)).toEqual(Array.from({ length: 100 }, (_, i) => `{"n":${i + 1}}`));
    });

    it('with 100k rows of mixed priorities (after ANALYZE) the claim\'s unkeyed part is one ordered Index Scan of the claim index (no Sort under its lock), no Seq Scan', async (ctx) => {
      // priorities -2..2 spread over the rows, a sixteenth of them delayed: the claim still reads the index in its order
      const { d, stores, names, t } = await seeded(100_000);
      await d.client.query(`UPDATE ${t} SET priority = (hashtext(id::text) & 7) % 5 - 2, available_at = CASE WHEN (hashtext(payload_json) & 15) = 0 THEN now() + interval '1 hour' ELSE available_at END`);
      await d.client.query(`ANALYZE ${t}`);
      const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${pgStatements(names).claim}`, ['work', 100, 30_000, randomUUID()]);
      const plan = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
      const all = plan.map(describeNode);
      const scans = plan.filter((n) => n['Relation Name'] === TABLE).map(describeNode);
      if (fixture.name === 'pglite' && scans.some((s) => s.includes('Seq Scan'))) {
        console.log(`[pglite] priority claim plan check skipped: its planner chose ${scans.join(', ')}`);
        ctx.skip();
      }
      console.log(`[${fixture.name}] claim plan with mixed priorities: ${all.join(' > ')}`);
      // the only Sort may order the claim's few candidates (at most 3n rows from its parts); the part that reads the
      // unkeyed rows locks them straight off the index, in its order
      const locks = plan.filter((n) => n['Node Type'] === 'LockRows').map(nodes);
      const unkeyedPart = locks.find((sub) => sub.some((n) => n['Node Type'] === 'Index Scan' && n['Index Name'] === names.claimIndex) && !sub.some((n) => n['Node Type'] === 'Nested Loop'));
      expect(unkeyedPart?.map(describeNode), all.join(' > ')).toBeDefined();
      expect(unkeyedPart!.some((n) => /Sort/.test(n['Node Type'])), unkeyedPart!.map(describeNode).join(' > ')).toBe(false);
      expect(scans.some((s) => s.includes('Seq Scan')), scans.join(', ')).toBe(false);
      expect(scans.some((s) => s.startsWith('Index Scan') && s.endsWith(`on ${names.claimIndex}`)), scans.join(', ')).toBe(true);
      // and it claims in that order: the highest priority's oldest rows first
      // (compared by sort key: PGlite's clock repeats within a statement, so rows may tie, and ties come in any order)
      const key = `priority || ' ' || to_char(available_at, 'YYYY-MM-DD HH24:MI:SS.US') || ' ' || to_char(created_at, 'YYYY-MM-DD HH24:MI:SS.US')`;
      const expected = await d.client.query<{ k: string }>(
        `SELECT ${key} AS k FROM ${t} WHERE queue = 'work' AND available_at <= now() ORDER BY priority DESC, available_at, created_at LIMIT 100`,
      );
      const claimed = await stores.transport.claim('work', 100, 30_000);
      const keys = await d.client.query<{ id: string; k: string }>(`SELECT id, ${key} AS k FROM ${t} WHERE id = ANY($1::uuid[])`, [claimed.map((c) => c.id)]);
      const keyOf = new Map(keys.rows.map((r) => [r.id, r.k]));
      expect(claimed.map((c) => keyOf.get(c.id))).toEqual(expected.rows.map((row) => row.k));
      expect(new Set(claimed.map((c) => c.priority))).toEqual(new Set([2]));
    });

    it('the pause test adds a one-time filter over the same seek: with 20k rows and 1k queue-state rows, no Seq Scan on the table', async (ctx) => {
      const { d, stores, names, t } = await seeded(20_000);
      await d.client.query(
        `INSERT INTO "${d.schema}"."${TABLE}_queue_state" (queue, paused_at) SELECT 'q' || g, CASE WHEN g % 2 = 0 THEN now() END FROM generate_series(1, 1000) AS g`,
      );
      await d.client.query(`ANALYZE ${t}`);
      await d.client.query(`ANALYZE "${d.schema}"."${TABLE}_queue_state"`);
      const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${pgStatements(names).claim}`, ['work', 100, 30_000, randomUUID()]);
      const plan = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
      const describe = (n: PlanNode) => `${n['Node Type']}${n['Relation Name'] ? ` ${n['Relation Name']}` : ''}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`;
      const scans = plan.filter((n) => n['Relation Name'] === TABLE).map(describe);
      if (fixture.name === 'pglite' && scans.some((s) => s.startsWith('Seq Scan'))) {
        console.log(`[pglite] claim plan check skipped: its planner chose ${scans.join(', ')}`);
        ctx.skip();
      }
      console.log(`[${fixture.name}] claim plan with the pause test: ${plan.map(describe).join(' > ')}`);
      expect(scans.some((s) => s.startsWith('Seq Scan')), scans.join(', ')).toBe(false);
      expect(scans.some((s) => s.includes(names.claimIndex)), scans.join(', ')).toBe(true);
      const state = plan.filter((n) => n['Relation Name'] === `${TABLE}_queue_state`);
      expect(state.map(describe).every((s) => s.includes('Index')), state.map(describe).join(', ')).toBe(true);
      // and it honours the pause
      await stores.transport.setQueuePaused('work', true);
      expect(await stores.transport.claim('work', 100, 30_000)).toHaveLength(0);
      await stores.transport.setQueuePaused('work', false);
      expect(await stores.transport.claim('work', 100, 30_000)).toHaveLength(100);
    });

    it("a limited claim counts the queue's leases from the lease roster, never its ready backlog, and claims over the ready seek (no Seq Scan)", async (ctx) => {
      const { d, stores, names } = await seeded(40_000, "CASE WHEN g % 4 = 0 THEN 'work' ELSE 'other' END");
      // 200 of the queue's 10k ready rows are leased (by limited claims: the roster lists them), the rest wait
      for (let i = 0; i < 4; i++) expect((await stores.transport.claimLimited('work', 50, 60_000, randomUUID(), { concurrency: 1000 })).messages).toHaveLength(50);
      type Analyzed = PlanNode & { 'Actual Rows'?: number; 'Actual Loops'?: number };
      let root: Analyzed | undefined;
      // EXPLAIN ANALYZE runs the claim: after the lock, as the store runs it, in a transaction rolled back
      const rollback = new Error('roll the analyzed claim back');
      const sql = pgLimitStatements(names);
      await d.client
        .transaction(async (tx) => {
          expect((await tx.query(sql.lock, ['work'])).rows).toHaveLength(1);
          const r = await tx.query<{ 'QUERY PLAN': Array<{ Plan: Analyzed }> }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql.claim}`, ['work', 16, 30_000, randomUUID(), 1000, null, 1]);
          root = r.rows[0]!['QUERY PLAN'][0]!.Plan;
          throw rollback;
        })
        .catch((err) => {
          if (err !== rollback) throw err;
        });
      const plan = nodes(root!) as Analyzed[];
      const describe = (n: PlanNode) => `${n['Node Type']}${n['Relation Name'] ? ` ${n['Relation Name']}` : ''}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`;
      const scans = plan.filter((n) => n['Relation Name'] === TABLE).map(describe);
      if (fixture.name === 'pglite' && scans.some((s) => s.startsWith('Seq Scan'))) {
        console.log(`[pglite] limited claim plan check skipped: its planner chose ${scans.join(', ')}`);
        ctx.skip();
      }
      console.log(`[${fixture.name}] limited claim plan: ${plan.map(describe).join(' > ')}`);
      expect(scans.some((s) => s.startsWith('Seq Scan')), scans.join(', ')).toBe(false);
      expect(scans.some((s) => s.includes(names.claimIndex)), scans.join(', ')).toBe(true); // the claim's pick
      // what the statement reads of the transport table: a primary-key probe per roster entry (200) and the claim's
      // seek (16 rows and their probes), where counting leased rows in the table read all 10k ready rows
      const read = plan.filter((n) => n['Relation Name'] === TABLE && n['Node Type'] !== 'ModifyTable').reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
      console.log(`[${fixture.name}] limited claim of 16 with 200 leases and ~10k ready rows: ${read} transport rows read`);
      expect(read, plan.map(describe).join(' > ')).toBeLessThan(1_000);
      const claimedRows = plan.find((n) => n['Node Type'] === 'ModifyTable' && n['Relation Name'] === TABLE);
      expect(claimedRows?.['Actual Rows'], 'the claim takes its 16 rows').toBe(16);

      // and it claims what the limit leaves: 200 leased under a limit of 205 leaves 5
      const c = await stores.transport.claimLimited('work', 16, 30_000, randomUUID(), { concurrency: 205 });
      expect(c.messages).toHaveLength(5);
      expect(c.limitedBy).toBe('concurrency');
      await stores.transport.ack(c.messages);
      const time = async (f: () => Promise<unknown>) => {
        const t0 = performance.now();
        for (let i = 0; i < 20; i++) await f();
        return (performance.now() - t0) / 20;
      };
      const limited = await time(async () => stores!.transport.ack((await stores!.transport.claimLimited('work', 4, 30_000, randomUUID(), { concurrency: 1000 })).messages));
      const plain = await time(async () => stores!.transport.ack(await stores!.transport.claim('work', 4, 30_000)));
      console.log(`[${fixture.name}] claim of 4 + ack with ~10k ready rows and 200 leases: limited ${limited.toFixed(2)} ms, unlimited ${plain.toFixed(2)} ms`);
    });
  });
}
