// The claim with ordering keys reads the keyed half of the claim index in its order, a probe of the partial ordering
// index per candidate row (no Seq Scan, no sort of the key's rows); once the front of the queue holds no head, it
// walks the keys (one descent each) instead of the backlog; on a migrated schema. And the publish stamps that order
// keys by (created_at, id) keep a batch's order and come after it.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { OpenedStores } from '../../shared/stores/open';
import type { ClaimedMessage } from '../../shared/transport/types';
import { pgStatements } from '../../shared/stores/postgres/statements';
import { transportNames } from '../../shared/sql/identifiers';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';
import { describeNode, nodes, type PlanNode } from './plan-nodes';

afterAll(() => closeSharedPglite());

const TABLE = 'asyncresponse_transport_messages';

for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] ordering-key claim plan`, { timeout: 180_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });

    /** A migrated schema with 50 jobs for each of 1,000 keys, created in key-round order (row g is key g % 1000's (g / 1000)th job). */
    const seededKeys = async () => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      const t = `"${d.schema}"."${TABLE}"`;
      await d.client.query(
        `INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, ordering_key)
         SELECT gen_random_uuid(), 'work', '{"n":' || g || '}', '{}', now() - interval '1 hour' + g * interval '1 millisecond',
                now() - interval '1 hour' + g * interval '1 millisecond', 'k' || (g % 1000)
         FROM generate_series(0, 49999) AS g`,
      );
      await d.client.query(`ANALYZE ${t}`);
      return { d, stores, names: transportNames(d.schema, TABLE, 'postgres') };
    };

    it('with 50k keyed rows (1,000 keys) a claim reads the claim index and probes the ordering index, never the whole table', async (ctx) => {
      const { d, stores, names } = await seededKeys();
      const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${pgStatements(names).claim}`, ['work', 100, 30_000, randomUUID()]);
      const plan = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
      const scans = plan.filter((n) => n['Relation Name'] === TABLE).map(describeNode);
      console.log(`[${fixture.name}] keyed claim plan: ${plan.map(describeNode).join(' > ')}`);
      if (fixture.name === 'pglite' && scans.some((s) => s.startsWith('Seq Scan'))) {
        console.log(`[pglite] keyed claim plan check skipped: its planner chose ${scans.join(', ')}`);
        ctx.skip();
      }
      expect(scans.some((s) => s.startsWith('Seq Scan')), scans.join(', ')).toBe(false);
      expect(scans.some((s) => s.includes(names.claimIndex)), scans.join(', ')).toBe(true);
      expect(scans.some((s) => s.includes(names.orderingIndex)), scans.join(', ')).toBe(true);
      // the keyed front (the part that joins its window to the table) reads the index in claim order: no Sort there
      const front = plan.filter((n) => n['Node Type'] === 'LockRows').map(nodes).find((sub) => sub.some((n) => n['Node Type'] === 'Nested Loop' && nodes(n).some((m) => m['Index Name'] === names.claimIndex)));
      expect(front?.map(describeNode), plan.map(describeNode).join(' > ')).toBeDefined();
      expect(front!.some((n) => /Sort/.test(n['Node Type'])), front!.map(describeNode).join(' > ')).toBe(false);

      // and it claims the heads: the first 100 rows are the first jobs of keys 0..99
      const claimed = await stores.transport.claim('work', 100, 30_000);
      expect(claimed.map((c) => c.payloadJson)).toEqual(Array.from({ length: 100 }, (_, i) => `{"n":${i}}`));
      // heads of keys 100..199 come next in the index; the leased heads and their successors are passed over
      const next = await stores.transport.claim('work', 100, 30_000);
      expect(next.map((c) => c.payloadJson)).toEqual(Array.from({ length: 100 }, (_, i) => `{"n":${i + 100}}`));
      const analyzed = await d.client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${pgStatements(names).claim}`, ['work', 100, 30_000, randomUUID()]);
      console.log(`[${fixture.name}] keyed claim, 200 heads leased, 100 more claimed:\n${analyzed.rows.map((x) => x['QUERY PLAN']).join('\n')}`);
    });

    it('with every head leased and 49 rows behind each of 1,000 keys, a claim walks the keys, not the 49,000 rows behind them', async () => {
      const { d, stores, names } = await seededKeys();
      const heads: ClaimedMessage[] = [];
      for (let i = 0; i < 10; i++) heads.push(...(await stores.transport.claim('work', 100, 60_000)));
      expect(heads.map((h) => h.payloadJson)).toEqual(Array.from({ length: 1000 }, (_, i) => `{"n":${i}}`));
      // nothing is claimable: every key's head is leased
      expect(await stores.transport.claim('work', 100, 60_000)).toHaveLength(0);
      // 300 heads succeed: their keys' second jobs are next, found behind the front
      const done = heads.filter((_, i) => i % 10 < 3);
      await stores.transport.ack(done);
      // EXPLAIN ANALYZE runs the claim: in a transaction rolled back, so the store's claim below finds the same rows
      type Analyzed = PlanNode & { 'Actual Rows'?: number; 'Actual Loops'?: number };
      const analyze = async (statement: string, values: unknown[]) => {
        let root: Analyzed | undefined;
        const rollback = new Error('roll the analyzed claim back');
        await d.client
          .transaction(async (tx) => {
            const r = await tx.query<{ 'QUERY PLAN': Array<{ Plan: Analyzed }> }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`, values);
            root = r.rows[0]!['QUERY PLAN'][0]!.Plan;
            throw rollback;
          })
          .catch((err) => {
            if (err !== rollback) throw err;
          });
        const plan = nodes(root!) as Analyzed[];
        const read = plan.filter((n) => n['Relation Name'] === TABLE && n['Node Type'] !== 'ModifyTable').reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
        return { plan, read, claimed: plan[0]!['Actual Rows'] };
      };
      const { plan, read, claimed } = await analyze(pgStatements(names).claim, ['work', 500, 60_000, randomUUID()]);
      console.log(`[${fixture.name}] claim with every head leased, 300 acked: ${read} rows read by its scans (49,000 rows wait behind the heads)`);
      expect(claimed, 'the 300 successors are claimed').toBe(300);
      expect(read, plan.map(describeNode).join(' > ')).toBeLessThan(10_000);
      // told the 300 freed keys (as a drain tells its next claim), it takes the same successors by one descent each,
      // and reads fewer rows than finding them among the 700 keys still held
      const freedKeys = done.map((h) => h.orderingKey!);
      expect(new Set(freedKeys).size).toBe(300);
      const hinted = await analyze(pgStatements(names).claimFreed, ['work', 500, 60_000, randomUUID(), freedKeys]);
      console.log(`[${fixture.name}] the same claim told the 300 freed keys: ${hinted.read} rows read`);
      expect(hinted.claimed, 'the 300 successors are claimed').toBe(300);
      expect(hinted.read).toBeLessThan(read);
      // and through the store: the successors, in claim order (the second job of each acked key), nothing else
      const next = await stores.transport.claim('work', 500, 60_000);
      const acked = new Set(done.map((h) => Number(JSON.parse(h.payloadJson).n) % 1000));
      expect(next.map((c) => c.payloadJson)).toEqual([...acked].sort((a, b) => a - b).map((k) => `{"n":${1000 + k}}`));
    });

    it('a table without the ordering key: refused without AUTO_CREATE_SCHEMA (naming the column and version), completed with it', async () => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      await d.client.query(`ALTER TABLE "${d.schema}"."${TABLE}" DROP COLUMN ordering_key`);
      const operator = await d.open(false);
      try {
        await expect(operator.transport.publish([{ id: randomUUID(), queue: 'q', payloadJson: '{}', headers: {}, delayMs: 0 }])).rejects.toThrow(
          /no column 'ordering_key' \(PostgreSQL schema version 13\)/,
        );
      } finally {
        await operator.close();
      }
      const creator = await d.open(true);
      try {
        const [outcome] = await creator.transport.publish([{ id: randomUUID(), queue: 'q', payloadJson: '{}', headers: {}, delayMs: 0, orderingKey: 'a' }]);
        expect(outcome!.inserted).toBe(true);
        const idx = await d.client.query(`SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = $2`, [d.schema, transportNames(d.schema, TABLE, 'postgres').orderingIndex]);
        expect(idx.rows).toHaveLength(1);
      } finally {
        await creator.close();
      }
    });

    it("a batch's rows are stamped 1 µs apart in batch order, and a publish right after it is stamped after its last row", async () => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      const t = `"${d.schema}"."${TABLE}"`;
      for (let round = 0; round < 10; round++) {
        const batch = Array.from({ length: 1000 }, (_, i) => ({ id: randomUUID(), queue: `stamps${round}`, payloadJson: `{"i":${i}}`, headers: {}, delayMs: 0, orderingKey: 'a' }));
        await stores.transport.publish(batch);
        const next = { ...batch[0]!, id: randomUUID(), payloadJson: '{"i":1000}' };
        await stores.transport.publish([next]);
        const r = await d.client.query<{ ordered: boolean; after: boolean }>(
          `SELECT bool_and(gap = interval '1 microsecond') AS ordered,
                  (SELECT created_at FROM ${t} WHERE id = $2) > max(created_at) AS after
           FROM (SELECT created_at, created_at - lag(created_at) OVER (ORDER BY (payload_json::jsonb ->> 'i')::int) AS gap
                 FROM ${t} WHERE queue = $1 AND id <> $2) AS s`,
          [`stamps${round}`, next.id],
        );
        expect(r.rows[0]).toEqual({ ordered: true, after: true });
      }
    });
  });
}
