// The SQL Server harness of the contract suite (loaded only when MSSQL_CONNECTION_STRING is set): a store on
// its own schema, raw table manipulations in T-SQL, and cleanup that drops the schema.

import * as sql from 'mssql';
import { silentLogger } from '../../shared/log';
import { createSqlServerPool } from '../../shared/stores/sqlserver/connection';
import { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { hasGap, shimsFor, tdsEngine } from './engine-gaps';
import type { Harness, RawOps } from './fixtures';
import { dropSqlServerSchema } from './sqlserver-drop-schema';

const TABLE = 'asyncresponse_transport_messages';
const EXACT = "queue = @queue AND queue + N'.' = @queue + N'.' COLLATE Latin1_General_100_BIN2";

type Params = Record<string, [sql.ISqlType, unknown]>;

export async function sqlServerHarness(connectionString: string, schema: string, autoCreateSchema: boolean): Promise<Harness> {
  const pools: sql.ConnectionPool[] = [];
  // on an engine with shimmed gaps (engine-gaps.ts ENGINE_SHIMS) the stores' statements are rewritten as they are sent
  const shim = shimsFor(await tdsEngine());
  const open = (poolMax: number) => {
    const pool = createSqlServerPool({ connectionString, poolMax, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 });
    pools.push(pool);
    if (shim) rewriteStatements(pool, shim);
    return pool;
  };
  // on an engine whose catalog views differ (engine-gaps.ts, catalogViews) the store skips the verification
  const verifyCatalog = !hasGap(await tdsEngine(), 'catalogViews');
  const storeOn = (pool: sql.ConnectionPool, auto = autoCreateSchema) =>
    new SqlServerTransportStore(pool, { schema, table: TABLE, autoCreateSchema: auto, logger: silentLogger, verifyCatalog });

  const admin = open(2);
  await admin.connect();
  const t = `[${schema}].[${TABLE}]`;
  const q = async (text: string, params: Params = {}) => {
    const request = admin.request();
    for (const [name, [type, value]] of Object.entries(params)) request.input(name, type, value);
    return request.query(text);
  };
  const id = (value: string): [sql.ISqlType, unknown] => [sql.UniqueIdentifier(), value];

  const raw: RawOps = {
    insert: async (rowId, queue, headersJson = '{}') => {
      await q(`INSERT INTO ${t} (id, queue, payload_json, headers_json) VALUES (@id, @queue, N'{}', @headers)`, {
        id: id(rowId),
        queue: [sql.NVarChar(200), queue],
        headers: [sql.NVarChar(sql.MAX), headersJson],
      });
    },
    row: async (rowId) => {
      const r = await q(`SELECT queue, attempts, lock_id FROM ${t} WHERE id = @id`, { id: id(rowId) });
      const row = r.recordset[0] as { queue: string; attempts: number; lock_id: string | null } | undefined;
      return row && { queue: row.queue, attempts: row.attempts, lockId: row.lock_id === null ? null : row.lock_id.toLowerCase() };
    },
    countQueue: async (queue) => {
      const r = await q(`SELECT COUNT(*) AS n FROM ${t} WHERE ${EXACT}`, { queue: [sql.NVarChar(200), queue] });
      return Number((r.recordset[0] as { n: number }).n);
    },
    rosterSize: async (queue) => {
      const r = await q(`SELECT COUNT(*) AS n FROM ${t.slice(0, -1)}_leases] WHERE ${EXACT}`, { queue: [sql.NVarChar(200), queue] });
      return Number((r.recordset[0] as { n: number }).n);
    },
    setLockId: async (rowId, lockId) => {
      await q(`UPDATE ${t} SET lock_id = @lock_id WHERE id = @id`, { id: id(rowId), lock_id: id(lockId) });
    },
    makeDue: async (rowId) => {
      await q(`UPDATE ${t} SET available_at = DATEADD(SECOND, -1, SYSUTCDATETIME()) WHERE id = @id`, { id: id(rowId) });
    },
    expireLease: async (rowId) => {
      await q(`UPDATE ${t} SET locked_until = DATEADD(SECOND, -1, SYSUTCDATETIME()) WHERE id = @id`, { id: id(rowId) });
    },
    ageCreated: async (rowId, ms) => {
      await q(
        `UPDATE ${t} SET created_at = DATEADD(SECOND, -CAST(@ms / 1000 AS int), DATEADD(MILLISECOND, -CAST(@ms % 1000 AS int), created_at)) WHERE id = @id`,
        { id: id(rowId), ms: [sql.BigInt(), ms] },
      );
    },
    createMisshapenTable: async () => {
      await q(`IF SCHEMA_ID(N'${schema}') IS NULL EXEC (N'CREATE SCHEMA [${schema}]');`);
      await q(
        `CREATE TABLE ${t} (id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,
           queue nvarchar(200) NOT NULL, payload_json nvarchar(200) NOT NULL,
           headers_json nvarchar(max) NOT NULL DEFAULT N'{}', created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),
           available_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(), locked_until datetime2 NULL,
           lock_id uniqueidentifier NULL, attempts int NOT NULL DEFAULT 0, dead_letter_reason nvarchar(max) NULL)`,
      );
    },
  };

  const store = storeOn(open(10));
  return {
    store,
    raw,
    schema,
    openPeer: async () => storeOn(open(4)),
    openWith: async (o) => storeOn(open(2), o.autoCreateSchema),
    close: async () => {
      try {
        await dropSqlServerSchema(admin, schema);
      } finally {
        for (const pool of pools) await pool.close().catch(() => undefined);
      }
    },
  };
}

/**
 * Every statement the pool's requests (and its transactions' requests) send goes through `rewrite` first: the store
 * under test builds its texts as in production, and only this engine's copy of them is rewritten (tds-shims.ts).
 */
export function rewriteStatements(pool: sql.ConnectionPool, rewrite: (text: string) => string): void {
  const patch = (request: sql.Request): sql.Request => {
    const query = request.query.bind(request) as (command: unknown, ...rest: unknown[]) => unknown;
    (request as unknown as { query: unknown }).query = (command: unknown, ...rest: unknown[]) =>
      query(typeof command === 'string' ? rewrite(command) : command, ...rest);
    return request;
  };
  const request = pool.request.bind(pool) as (...args: unknown[]) => sql.Request;
  (pool as unknown as { request: unknown }).request = (...args: unknown[]) => patch(request(...args));
  const transaction = pool.transaction.bind(pool) as (...args: unknown[]) => sql.Transaction;
  (pool as unknown as { transaction: unknown }).transaction = (...args: unknown[]) => {
    const tx = transaction(...args);
    const txRequest = tx.request.bind(tx) as (...a: unknown[]) => sql.Request;
    (tx as unknown as { request: unknown }).request = (...a: unknown[]) => patch(txRequest(...a));
    return tx;
  };
}
