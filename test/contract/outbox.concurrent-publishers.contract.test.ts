// H2 of the T-SQL review: a publish inside an open business transaction (the outbox) must not block other
// publishers of new ids. On SQL Server the old probe (UPDLOCK, HOLDLOCK) locked the primary key's last range, which
// every new time-ordered id probes, until the business transaction committed; the procedures now serialise per
// message id (an applock) and the app statements take no range lock. PostgreSQL's ON CONFLICT DO NOTHING takes
// no such lock (its twin here confirms it). Two real sessions are needed, so PGlite (one session) is not run.
// A T-SQL engine that ignores lock hints (Babelfish) passes this whatever the probe: there it checks only that
// the procedure and the statements run inside open transactions.

import * as sql from 'mssql';
import { Client } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { createSqlServerPool } from '../../shared/stores/sqlserver/connection';
import { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { SqlServerMigrator } from '../../shared/stores/sqlserver/migrator';
import { poolHolderFor } from '../../shared/stores/sqlserver/pool-guard';
import { schemaNames } from '../../shared/stores/schema-names';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { hasGap, skipOnGap, tdsEngine } from './engine-gaps';
import type { OpenedStores } from '../../shared/stores/open';
import { message } from '../support/messages';
import { announce, MSSQL_SKIP_REASON, newSchema } from './fixtures';
import { postgresSchemaDb, type SchemaDb } from './schema-fixtures';

const TABLE = 'asyncresponse_transport_messages';
const BLOCKED_AFTER_MS = 5_000;

/** Resolves with the value, or rejects when `p` takes longer than `ms` (a publish blocked behind the open transaction). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms while another transaction held a publish open`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

const pg = postgresSchemaDb();
describe.skipIf(!announce(pg))('[postgres] publishers of new ids beside an open outbox transaction', { timeout: 60_000 }, () => {
  let d: SchemaDb | undefined;
  let stores: OpenedStores | undefined;
  const sessions: Client[] = [];
  afterEach(async () => {
    for (const c of sessions.splice(0)) await c.end().catch(() => undefined);
    await stores?.close();
    await d?.close();
  });

  it('neither a store publish nor a second outbox transaction waits for the first to commit', async () => {
    d = await pg.create();
    stores = await d.open(true);
    await stores.migrator.apply();
    const fn = `"${d.schema}"."${TABLE}_publish"`;
    const session = async () => {
      const c = new Client({ connectionString: process.env.PG_URL });
      await c.connect();
      sessions.push(c);
      return c;
    };
    const first = await session();
    await first.query('BEGIN');
    await first.query(`SELECT * FROM ${fn}('orders', '{"order":1}')`);

    const [stored] = await within(stores.transport.publish([message('other')]), BLOCKED_AFTER_MS, 'the store publish');
    expect(stored!.inserted).toBe(true);
    const second = await session();
    await second.query('BEGIN');
    await within(second.query(`SELECT * FROM ${fn}('orders', '{"order":2}')`), BLOCKED_AFTER_MS, 'the second outbox publish');
    await second.query('COMMIT');
    await first.query('COMMIT');
    const n = await d.client.query<{ n: string }>(`SELECT count(*) AS n FROM "${d.schema}"."${TABLE}"`);
    expect(Number(n.rows[0]!.n)).toBe(3);
  });
});

describe.skipIf(!announce({ name: 'sqlserver', skipReason: MSSQL_SKIP_REASON }))(
  '[sqlserver] publishers of new ids beside an open outbox transaction',
  { timeout: 120_000 },
  () => {
    const pools: sql.ConnectionPool[] = [];
    let store: SqlServerTransportStore | undefined;
    let schema = '';
    afterEach(async () => {
      await store?.close();
      const admin = pools[0];
      if (admin && schema) {
        await admin
          .request()
          .query(
            `DECLARE @s nvarchar(max) = N'';
             SELECT @s += N'DROP PROCEDURE [${schema}].' + QUOTENAME(name) + N'; ' FROM sys.procedures WHERE schema_id = SCHEMA_ID(N'${schema}');
             SELECT @s += N'DROP TABLE [${schema}].' + QUOTENAME(name) + N'; ' FROM sys.tables WHERE schema_id = SCHEMA_ID(N'${schema}');
             SELECT @s += N'DROP SEQUENCE [${schema}].' + QUOTENAME(name) + N'; ' FROM sys.sequences WHERE schema_id = SCHEMA_ID(N'${schema}');
             EXEC (@s); IF SCHEMA_ID(N'${schema}') IS NOT NULL EXEC (N'DROP SCHEMA [${schema}]');`,
          )
          .catch(() => undefined);
      }
      for (const p of pools.splice(0)) await p.close();
    });

    it('neither a store publish nor a second outbox transaction waits for the first to commit', async (ctx) => {
      await skipOnGap('sqlserver', ctx, 'utf8Collation');
      schema = newSchema();
      const open = async () => {
        const pool = createSqlServerPool({ connectionString: process.env.MSSQL_CONNECTION_STRING!, poolMax: 4, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 });
        pools.push(pool);
        await pool.connect();
        return pool;
      };
      const admin = await open();
      const verifyCatalog = !hasGap(await tdsEngine(), 'catalogViews');
      const storePool = await open();
      const names = schemaNames(transportNames(schema, TABLE, 'sqlserver'), channelNames(schema, DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver');
      await new SqlServerMigrator(poolHolderFor(storePool, silentLogger), names).apply(); // every version, the publish procedures included
      store = new SqlServerTransportStore(storePool, { schema, table: TABLE, autoCreateSchema: true, logger: silentLogger, verifyCatalog }, { ownsPool: false });
      await store.ensureSchema();
      const proc = `[${schema}].[${TABLE}_publish]`;
      const publishIn = (tx: sql.Transaction, payload: string) =>
        tx.request().input('queue', sql.NVarChar(sql.MAX), 'orders').input('payload', sql.NVarChar(sql.MAX), payload).query(`EXEC ${proc} @queue = @queue, @payload = @payload;`);

      const first = new sql.Transaction(admin);
      await first.begin();
      await publishIn(first, '{"order":1}');

      const [stored] = await within(store.publish([message('other')]), BLOCKED_AFTER_MS, 'the store publish');
      expect(stored!.inserted).toBe(true);
      const second = new sql.Transaction(await open());
      await second.begin();
      await within(publishIn(second, '{"order":2}'), BLOCKED_AFTER_MS, 'the second outbox publish');
      await second.commit();
      await first.commit();
      const n = await admin.request().query(`SELECT COUNT(*) AS n FROM [${schema}].[${TABLE}]`);
      expect(Number((n.recordset[0] as { n: number }).n)).toBe(3);
    });
  },
);
