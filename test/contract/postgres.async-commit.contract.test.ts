// Claims and acks commit without waiting for the WAL flush (stores/postgres/async-commit.ts): each hot statement turns
// synchronous_commit off for its own transaction only, so the next statement on the pooled connection (a publish)
// waits for the flush again; DURABLE_CLAIMS_AND_ACKS keeps the flush for them too. What it saves is measured in
// bench/peers (pg_stat_wal's flushes per 1,000 jobs of the drain): the counter is the whole server's, so a test that
// shares the server with other test files cannot count it.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import type { OpenedStores } from '../../shared/stores/open';
import { ASYNC_COMMIT_TEST } from '../../shared/stores/postgres/async-commit';
import { pgPoolClient, type PgClient, type Queryable } from '../../shared/stores/postgres/client';
import { pgHistoryStatements } from '../../shared/stores/postgres/history-statements';
import { pgLimitStatements } from '../../shared/stores/postgres/limit-statements';
import { pgStatements } from '../../shared/stores/postgres/statements';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { transportNames } from '../../shared/sql/identifiers';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';

afterAll(() => closeSharedPglite());

const TABLE = DEFAULT_TRANSPORT_TABLE;

const setting = async (q: Queryable) => (await q.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;

for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] claims and acks commit without the WAL flush`, { timeout: 120_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    const extra: PgClient[] = [];
    afterEach(async () => {
      await stores?.close();
      for (const c of extra.splice(0)) await c.close();
      await d?.close();
      stores = d = undefined;
    });
    const seeded = async (rows: number) => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      await stores.transport.publish(Array.from({ length: rows }, (_, i) => ({ id: randomUUID(), queue: 'work', payloadJson: `{"n":${i}}`, headers: {}, delayMs: 0 })));
      return { d, stores, names: transportNames(d.schema, TABLE, 'postgres') };
    };

    it('each claim and ack turns synchronous_commit off inside its own transaction; with the durable option it stays on', async () => {
      const { d, stores, names } = await seeded(40);
      const seen: Record<string, string> = {};
      for (const durable of [false, true]) {
        const sql = pgStatements(names, { asyncCommit: !durable });
        const history = pgHistoryStatements(names, { asyncCommit: !durable });
        const limited = pgLimitStatements(names, { asyncCommit: !durable });
        const settle = async () => {
          const rows = await stores.transport.claim('work', 2, 30_000);
          expect(rows).toHaveLength(2);
          return [rows.map((r) => r.id), rows.map((r) => r.lockId)];
        };
        const runs: Array<[string, string, () => Promise<unknown[]>, number]> = [
          ['claim', sql.claim, async () => ['work', 2, 30_000, randomUUID()], 2],
          ['claim by routine', sql.claimCall, async () => ['work', 2, 30_000, randomUUID()], 2],
          ['limited claim', limited.claimCall, async () => ['work', 2, 30_000, randomUUID(), 1000, null, null], 3],
          ['ack', sql.ack, settle, 1],
          ['unkeyed ack', sql.ackUnkeyed, settle, 0],
          ['ack and take next', sql.ackTake, async () => [...(await settle()), 'work', 0, 30_000, randomUUID()], 1],
          ['ack into history', history.ackToHistory, settle, 1],
        ];
        for (const [name, text, params, rows] of runs) {
          const values = await params();
          seen[`${name}${durable ? ' (durable)' : ''}`] = await d.client.transaction(async (tx) => {
            const r = await tx.query(text, values);
            expect(r.rows.length, name).toBe(rows); // each did its work: the test is on a statement that ran
            return setting(tx);
          });
        }
      }
      expect(seen).toEqual({
        claim: 'off',
        'claim by routine': 'off',
        'limited claim': 'off',
        ack: 'off',
        'unkeyed ack': 'off',
        'ack and take next': 'off',
        'ack into history': 'off',
        'claim (durable)': 'on',
        'claim by routine (durable)': 'on',
        'limited claim (durable)': 'on',
        'ack (durable)': 'on',
        'unkeyed ack (durable)': 'on',
        'ack and take next (durable)': 'on',
        'ack into history (durable)': 'on',
      });
    });

    it('the setting ends with the statement: the next statement on the same session waits for the flush', async () => {
      const { d, stores, names } = await seeded(4);
      // one session: PGlite has only one; on the server a pool of one connection
      const one: PgClient = fixture.name === 'postgres' ? pgPoolClient(new Pool({ connectionString: process.env.PG_URL, max: 1 })) : d.client;
      if (one !== d.client) extra.push(one);
      const claimed = await one.query<{ id: string; lock_id: string }>(pgStatements(names).claim, ['work', 4, 30_000, randomUUID()]);
      expect(claimed.rows).toHaveLength(4);
      expect(await setting(one)).toBe('on');
      const acked = await one.query(pgStatements(names).ackUnkeyed, [claimed.rows.map((r) => r.id), claimed.rows.map((r) => r.lock_id)]);
      expect(acked.rowCount).toBe(4);
      expect(await setting(one)).toBe('on');
      expect(await stores.transport.claim('work', 10, 30_000)).toEqual([]);
    });

    it('the store sends the relaxed claim and ack by default, and the durable ones with durableClaimsAndAcks', async () => {
      const { d } = await seeded(8);
      const sent: string[] = [];
      const recording: PgClient = { ...d.client, query: (text, values, name) => (sent.push(text), d.client.query(text, values, name)) };
      for (const durable of [false, true]) {
        sent.length = 0;
        const store = new PostgresTransportStore(recording, { schema: d.schema, table: TABLE, autoCreateSchema: false, logger: silentLogger, durableClaimsAndAcks: durable });
        const claimed = await store.claim('work', 2, 30_000);
        expect(claimed).toHaveLength(2);
        expect(await store.ack(claimed)).toBe(2);
        // the claim is the claim routine's call (schema version 25)
        const hot = sent.filter((t) => /^SELECT \* FROM \S+_claim"\(|^DELETE/.test(t.trim()));
        expect(hot, sent.join('\n---\n')).toHaveLength(2);
        expect(hot.map((t) => t.includes(ASYNC_COMMIT_TEST))).toEqual([!durable, !durable]);
      }
    });
  });
}
