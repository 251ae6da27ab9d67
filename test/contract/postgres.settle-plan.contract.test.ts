// The PostgreSQL drain's per-job writes stay small as the backlog grows:
// - a batched ack (and the unstarted hand-back, and the ack into history) probes the primary key for its ids. As a
//   plain join with unnest's pairs, the planner hashed the whole table once it held some tens of thousands of rows
//   (a Seq Scan per ack, its cost growing with the backlog: 17 ms at 20k rows where the probes take about 1 ms);
// - a claim is not a HOT update since the ready set (version 18): its lease moves the row out of the ready-set index
//   into the leased index, which is what keeps leased rows out of every claim's range (docs/ready-set.md); the
//   fillfactor of version 11 still leaves room for the new version on the row's page.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { OpenedStores } from '../../shared/stores/open';
import { pgStatements } from '../../shared/stores/postgres/statements';
import { pgHistoryStatements } from '../../shared/stores/postgres/history-statements';
import { pgLimitStatements } from '../../shared/stores/postgres/limit-statements';
import { TRANSPORT_AUTOVACUUM, TRANSPORT_FILLFACTOR } from '../../shared/stores/postgres/migrations';
import { transportNames, type TransportNames } from '../../shared/sql/identifiers';
import { announce } from './fixtures';
import { closeSharedPglite, privatePostgresDb, schemaDbFixtures, type SchemaDb, type SchemaDbFixture } from './schema-fixtures';
import { describeNode, explainRolledBack, nodes, type PlanNode } from './plan-nodes';

afterAll(() => closeSharedPglite());

const TABLE = 'asyncresponse_transport_messages';

/** The statements that settle a batch of (id, lock id) pairs: each must probe the primary key for its ids. */
function settlementStatements(names: TransportNames): Record<string, string> {
  const pg = pgStatements(names);
  return { ack: pg.ack, ackUnkeyed: pg.ackUnkeyed, releaseUnstarted: pg.releaseUnstarted, ackToHistory: pgHistoryStatements(names).ackToHistory };
}

for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] settle plans and claim updates`, { timeout: 180_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });
    const seeded = async (rows: number, on: SchemaDbFixture = fixture) => {
      d = await on.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      const t = `"${d.schema}"."${TABLE}"`;
      await d.client.query(
        `INSERT INTO ${t} (id, queue, payload_json, headers_json) SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'work', '{"n":' || g || '}', '{}' FROM generate_series(1, ${rows}) AS g`,
      );
      await d.client.query(`ANALYZE ${t}`); // ids in insertion order, as the engine's time-ordered ids are
      return { d, stores, t, names: transportNames(d.schema, TABLE, 'postgres') };
    };

    it('with 20k rows, acking 500 claimed rows (plain, into history, or handed back unstarted) reads no row beyond them', async () => {
      const { d, stores, names } = await seeded(20_000);
      const claimed = await stores.transport.claim('work', 500, 30_000);
      expect(claimed).toHaveLength(500);
      const params = [claimed.map((c) => c.id), claimed.map((c) => c.lockId)];
      const statements = settlementStatements(names);
      for (const [name, text] of Object.entries(statements)) {
        const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, params);
        const scans = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan).filter((n) => n['Relation Name'] === TABLE).map(describeNode);
        expect(scans.length, `${name}: ${scans.join(', ')}`).toBeGreaterThan(0);
        expect(scans.some((s) => s.startsWith('Seq Scan')), `${name}: ${scans.join(', ')}`).toBe(false);
      }
      // and the ack still settles exactly its fenced rows
      expect(await stores.transport.ack(claimed.map((c) => ({ id: c.id, lockId: c.lockId })))).toBe(500);
    });

    it('with 20k rows leased and statistics taken while none was, a prepared ack of 500 probes the primary key: it reads no other lease', async () => {
      const { d, stores, names } = await seeded(20_000);
      const leases = [];
      for (let i = 0; i < 40; i++) leases.push(...(await stores.transport.claim('work', 500, 30_000)));
      expect(leases).toHaveLength(20_000);
      const batch = leases.filter((_, i) => i % 40 === 7).slice(0, 500); // spread over the table, as a drain's acks are
      const statements = settlementStatements(names);
      for (const [name, text] of Object.entries(statements)) {
        // A drain's statements are prepared, and after five runs PostgreSQL may keep the generic plan: `= ANY($1)` is
        // then an unhashed filter wherever it is not an index condition. EXPLAIN ANALYZE runs the statement: its
        // transaction is rolled back, so each statement meets the same leases.
        const uuids = (xs: string[]) => `'{${xs.join(',')}}'::uuid[]`; // EXECUTE takes values, not bind parameters
        const plan = await explainRolledBack(d.client, `EXECUTE settle_probe(${uuids(batch.map((c) => c.id))}, ${uuids(batch.map((c) => c.lockId))})`, [], {
          setup: async (tx) => {
            await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
            await tx.query(`PREPARE settle_probe(uuid[], uuid[]) AS ${text}`);
          },
          teardown: async (tx) => void (await tx.query('DEALLOCATE settle_probe')), // PREPARE is not transactional
        });
        const scans = nodes(plan).filter((n) => n['Relation Name'] === TABLE);
        const described = scans.map(describeNode).join(', ');
        expect(scans.some((n) => String(n['Index Name'] ?? '').endsWith('_leased_idx')), `${name}: ${described}`).toBe(false);
        // 500 probes of the primary key and their rows' writes (an update's index entries included): measured 6.5-8k
        // buffers; a read of the leased set fetches each of the 20k leased rows, at least a buffer each
        const read = scans.reduce((sum, n) => sum + Number(n['Shared Hit Blocks'] ?? 0) + Number(n['Shared Read Blocks'] ?? 0), 0);
        expect(read, `${name}: ${described}`).toBeLessThan(12_000);
      }
    });

    it('a claim (plain or limited) fetches each picked row by its TID, with no per-row test against an array of ids', async () => {
      const { d, names } = await seeded(2_000);
      const texts = { claim: pgStatements(names).claim, limited: pgLimitStatements(names).claim };
      for (const [name, text] of Object.entries(texts)) {
        const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
          `EXPLAIN (FORMAT JSON) ${text}`,
          name === 'claim' ? ['work', 500, 30_000, randomUUID()] : ['work', 500, 30_000, randomUUID(), 1000, null, null],
        );
        const all = nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
        const tid = all.filter((n) => n['Node Type'] === 'Tid Scan');
        expect(tid.map((n) => /^\(ctid = ANY \(.+\)\)$/.test(n['TID Cond'] ?? '')), `${name}: ${tid.map((n) => n['TID Cond']).join(', ')}`).toEqual([true]);
        // before, `m.id = ANY(ARRAY(SELECT id FROM picked))`: 500 × 250 uuid comparisons a claim of 500
        expect(all.filter((n) => /= ANY/.test(n.Filter ?? '') && n['Relation Name'] === TABLE).map((n) => n.Filter), name).toEqual([]);
      }
    });

    it(`the transport table has fillfactor ${TRANSPORT_FILLFACTOR}; a claim of 200 rows is 200 updates, none HOT (the lease leaves the ready-set index)`, async () => {
      const { d, t, names } = await seeded(2_000);
      const opts = await d.client.query<{ reloptions: string[] | null }>(`SELECT reloptions FROM pg_class WHERE oid = '${t}'::regclass`);
      expect(opts.rows[0]!.reloptions).toContain(`fillfactor=${TRANSPORT_FILLFACTOR}`);
      await d.client.query('BEGIN');
      try {
        const claimed = await d.client.query(pgStatements(names).claim, ['work', 200, 30_000, randomUUID()]);
        expect(claimed.rows).toHaveLength(200);
        const s = await d.client.query<{ upd: string; hot: string }>(
          `SELECT n_tup_upd::text AS upd, n_tup_hot_upd::text AS hot FROM pg_stat_xact_user_tables WHERE relid = '${t}'::regclass`,
        );
        expect({ updated: Number(s.rows[0]!.upd), hot: Number(s.rows[0]!.hot) }).toEqual({ updated: 200, hot: 0 });
      } finally {
        await d.client.query('ROLLBACK');
      }
    });

    it('the transport table is vacuumed on a fixed count of dead rows without the cost delay: a claim beside 50,000 acked rows walks their entries until a VACUUM', async () => {
      // on the server in a database of its own: another test file's open transaction would keep the rows from the VACUUM
      const own = fixture.name === 'postgres' ? await privatePostgresDb() : undefined;
      try {
        await vacuumedClaim(own?.fixture);
      } finally {
        await stores?.close();
        await d?.close();
        stores = d = undefined;
        await own?.drop();
      }
    });
    const vacuumedClaim = async (on?: SchemaDbFixture) => {
      const { d, t, names } = await seeded(50_000, on);
      const opts = await d.client.query<{ reloptions: string[] | null }>(`SELECT reloptions FROM pg_class WHERE oid = '${t}'::regclass`);
      for (const [k, v] of Object.entries(TRANSPORT_AUTOVACUUM)) expect(opts.rows[0]!.reloptions).toContain(`${k}=${v}`);
      // every row claimed and acked, as a drain leaves them, then 10 ready rows
      await d.client.query(`UPDATE ${t} SET lock_id = gen_random_uuid(), locked_until = now() - interval '1 second', attempts = 1, state = NULL`);
      await d.client.query(`DELETE FROM ${t}`);
      await d.client.query(
        `INSERT INTO ${t} (id, queue, payload_json, headers_json) SELECT ('00000000-0000-7000-9000-' || lpad(to_hex(g), 12, '0'))::uuid, 'work', '{}', '{}' FROM generate_series(1, 10) AS g`,
      );
      await d.client.query(`ANALYZE ${t}`);
      const claimRead = async () => {
        const plan = await explainRolledBack(d.client, pgStatements(names).claim, ['work', 500, 30_000, randomUUID()]);
        expect(Number(plan['Actual Rows']), 'the claim takes the 10 ready rows').toBe(10);
        return Number(plan['Shared Hit Blocks'] ?? 0) + Number(plan['Shared Read Blocks'] ?? 0);
      };
      await claimRead(); // the first walk may mark the dead entries (a later one skips them, yet still reads their pages)
      const before = await claimRead();
      await d.client.query(`VACUUM ${t}`);
      const after = await claimRead();
      // measured: 2,287 buffers before, 101 after on the server; 621 and 102 on PGlite (beside 1,000,000 acked rows on
      // the server: 38,000 buffers and 175–250 ms, 0.8 ms after a VACUUM)
      console.log(`[${fixture.name}] claim beside 50,000 acked rows: ${before} buffers before the VACUUM, ${after} after`);
      expect(after, `before ${before}, after ${after}`).toBeLessThan(200);
      expect(before, `before ${before}, after ${after}`).toBeGreaterThan(after * 5);
    };
  });
}
