// Flow state store harnesses for the contract suite: PGlite always, the PostgreSQL server with PG_URL, SQL Server
// with MSSQL_CONNECTION_STRING. Each opens the app's stores (openPostgresStoresOn / openSqlServerStores) on its
// own schema, so the flow table comes from the schema versions as in the app, and drops the schema after.

import * as sql from 'mssql';
import { Pool } from 'pg';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import type { FlowStateStore } from '../../shared/flows/store';
import type { TransportStore } from '../../shared/transport/types';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { openPostgresStoresOn } from '../../shared/stores/open';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { pgPoolClient, pgliteClient, type PgClient } from '../../shared/stores/postgres/client';
import { DEFAULT_FLOW_STATE_TABLE } from '../../shared/stores/schema-names';
import { MSSQL_SKIP_REASON, newSchema, PG_SKIP_REASON, type StoreName } from './fixtures';

export interface FlowRawRow {
  revision: number;
  /** expires_at_utc − updated_at_utc, in ms. */
  ttlMs: number;
  flowName: string;
  status: string;
  /** The stored head (the ledger without the steps its rows hold). */
  stateJson: string;
}

export interface FlowRawStepRow {
  seq: number;
  name: string;
  json: string;
  revision: number;
}

export interface FlowHarness {
  store: FlowStateStore;
  /** The transport opened beside it (the table a carrying write inserts its jobs into). */
  transport: TransportStore;
  /** A row written straight into the table (an older or newer host, a hand edit), live for 5 minutes. */
  seed(flowId: string, stateJson: string, revision: number): Promise<void>;
  raw(flowId: string): Promise<FlowRawRow | undefined>;
  /** The run's rows in the steps table, by seq (stale ones included). */
  stepRows(flowId: string): Promise<FlowRawStepRow[]>;
  /** Test-only: move a row's expiry into the past. */
  expire(flowId: string): Promise<void>;
  close(): Promise<void>;
}

export interface FlowFixture {
  name: StoreName;
  skipReason?: string;
  /** Real concurrent sessions (PGlite is one session). */
  concurrent: boolean;
  create(options?: { maxStateBytes?: number }): Promise<FlowHarness>;
}

function pgHarness(client: PgClient, schema: string, close: () => Promise<void>, maxStateBytes?: number): Promise<FlowHarness> {
  const t = `"${schema}"."${DEFAULT_FLOW_STATE_TABLE}"`;
  const steps = `"${schema}"."${DEFAULT_FLOW_STATE_TABLE}_steps"`;
  return (async () => {
    const stores = await openPostgresStoresOn(
      client,
      { schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema: true, logger: silentLogger },
      { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema: true, logger: silentLogger },
      { maxStateBytes },
    );
    return {
      store: stores.flows,
      transport: stores.transport,
      seed: async (flowId, stateJson, revision) => {
        await stores.flows.observeLease('-'); // the first operation runs the schema gate (creates the table)
        await client.query(
          `INSERT INTO ${t} (flow_id, flow_name, status, state_json, updated_at_utc, expires_at_utc, revision)
           VALUES ($1, 'seeded', 'Running', $2, clock_timestamp(), clock_timestamp() + interval '5 minutes', $3)`,
          [flowId, stateJson, revision],
        );
      },
      raw: async (flowId) => {
        const r = await client.query<{ revision: string; ttl_ms: string; flow_name: string; status: string; state_json: string }>(
          `SELECT revision::text AS revision, (extract(epoch FROM expires_at_utc - updated_at_utc) * 1000)::text AS ttl_ms, flow_name, status, state_json FROM ${t} WHERE flow_id = $1`,
          [flowId],
        );
        const row = r.rows[0];
        return row && { revision: Number(row.revision), ttlMs: Number(row.ttl_ms), flowName: row.flow_name, status: row.status, stateJson: row.state_json };
      },
      stepRows: async (flowId) => {
        const r = await client.query<{ seq: number; step_name: string; step_json: string; revision: string }>(
          `SELECT seq, step_name, step_json, revision::text AS revision FROM ${steps} WHERE flow_id = $1 ORDER BY seq`,
          [flowId],
        );
        return r.rows.map((x) => ({ seq: Number(x.seq), name: x.step_name, json: x.step_json, revision: Number(x.revision) }));
      },
      expire: async (flowId) => {
        await client.query(`UPDATE ${t} SET expires_at_utc = clock_timestamp() - interval '1 second' WHERE flow_id = $1`, [flowId]);
      },
      close,
    };
  })();
}

async function sqlServerHarness(connectionString: string, maxStateBytes?: number): Promise<FlowHarness> {
  const { openSqlServerStores } = await import('../../shared/stores/sqlserver/open');
  const { hasGap, shimsFor, tdsEngine } = await import('./engine-gaps');
  const { rewriteStatements } = await import('./sqlserver-harness');
  const { dropSqlServerSchema } = await import('./sqlserver-drop-schema');
  const schema = newSchema();
  const verifyCatalog = !hasGap(await tdsEngine(), 'catalogViews');
  const engine = await tdsEngine();
  const opened = openSqlServerStores(
    { connectionString, poolMax: 20, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 },
    { schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema: true, logger: silentLogger, verifyCatalog },
    { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'sqlserver'), autoCreateSchema: true, logger: silentLogger },
    {},
    { maxStateBytes, verifyCatalog },
  );
  // An engine the schema gate refuses (no UTF-8 collation: Babelfish) still runs the store's own statements: the
  // table comes from version 7's batches and the store opens without the gate and the catalog check.
  const stores = hasGap(engine, 'utf8Collation') ? await withoutGate(opened, schema, maxStateBytes) : opened;
  // on an engine with shimmed gaps (engine-gaps.ts ENGINE_SHIMS) the store's statements are rewritten as they are sent
  const shim = shimsFor(engine);
  if (shim) rewriteStatements(await stores.poolHolder.get(), shim);
  const t = `[${schema}].[${DEFAULT_FLOW_STATE_TABLE}]`;
  const steps = `[${schema}].[${DEFAULT_FLOW_STATE_TABLE}_steps]`;
  const q = async (text: string, params: Record<string, [sql.ISqlType, unknown]> = {}) => {
    const request = (await stores.poolHolder.get()).request();
    for (const [name, [type, value]] of Object.entries(params)) request.input(name, type, value);
    return request.query(text);
  };
  const id = (v: string): [sql.ISqlType, unknown] => [sql.NVarChar(400), v];
  return {
    store: stores.flows,
    transport: stores.transport,
    seed: async (flowId, stateJson, revision) => {
      await stores.flows.observeLease('-'); // the first operation runs the schema gate (creates the table)
      await q(
        `INSERT INTO ${t} (flow_id, flow_name, status, state_json, updated_at_utc, expires_at_utc, revision)
         VALUES (@id, N'seeded', N'Running', @json, SYSUTCDATETIME(), DATEADD(MINUTE, 5, SYSUTCDATETIME()), @revision)`,
        { id: id(flowId), json: [sql.NVarChar(sql.MAX), stateJson], revision: [sql.BigInt(), revision] },
      );
    },
    raw: async (flowId) => {
      const r = await q(
        `SELECT revision, DATEDIFF_BIG(MICROSECOND, updated_at_utc, expires_at_utc) AS ttl_us, flow_name, status, state_json FROM ${t} WHERE flow_id = @id`,
        { id: id(flowId) },
      );
      const row = r.recordset[0] as { revision: string | number; ttl_us: string | number; flow_name: string; status: string; state_json: string } | undefined;
      return row && { revision: Number(row.revision), ttlMs: Number(row.ttl_us) / 1000, flowName: row.flow_name, status: row.status, stateJson: String(row.state_json) };
    },
    stepRows: async (flowId) => {
      const r = await q(`SELECT seq, step_name, step_json, revision FROM ${steps} WHERE flow_id = @id ORDER BY seq`, { id: id(flowId) });
      return (r.recordset as Array<{ seq: number; step_name: string; step_json: string; revision: string | number }>).map((x) => ({
        seq: Number(x.seq),
        name: String(x.step_name),
        json: String(x.step_json),
        revision: Number(x.revision),
      }));
    },
    expire: async (flowId) => {
      await q(`UPDATE ${t} SET expires_at_utc = DATEADD(SECOND, -1, SYSUTCDATETIME()) WHERE flow_id = @id`, { id: id(flowId) });
    },
    close: async () => {
      try {
        await dropSqlServerSchema(await stores.poolHolder.get(), schema);
      } finally {
        await stores.close();
      }
    },
  };
}

/** One PGlite per test file (its start-up takes seconds); each test has its own schema. */
let sharedPglite: Promise<PgClient> | undefined;

export async function closeSharedFlowPglite(): Promise<void> {
  const c = await sharedPglite;
  sharedPglite = undefined;
  await c?.close();
}

export function flowFixtures(): FlowFixture[] {
  return [
    {
      name: 'pglite',
      concurrent: false,
      async create(options = {}) {
        sharedPglite ??= (async () => {
          const { PGlite } = await import('@electric-sql/pglite');
          const db = new PGlite();
          await db.waitReady;
          return pgliteClient(db);
        })();
        const shared = await sharedPglite;
        const client: PgClient = { ...shared, close: async () => undefined };
        const schema = newSchema();
        return pgHarness(client, schema, async () => void (await shared.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)), options.maxStateBytes);
      },
    },
    {
      name: 'postgres',
      concurrent: true,
      skipReason: PG_SKIP_REASON,
      async create(options = {}) {
        const pool = new Pool({ connectionString: process.env.PG_URL, max: 16 });
        pool.on('error', () => undefined);
        const client = pgPoolClient(pool);
        const schema = newSchema();
        return pgHarness(
          client,
          schema,
          async () => {
            await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
            await client.close();
          },
          options.maxStateBytes,
        );
      },
    },
    {
      name: 'sqlserver',
      concurrent: true,
      skipReason: MSSQL_SKIP_REASON,
      create: (options = {}) => sqlServerHarness(process.env.MSSQL_CONNECTION_STRING!, options.maxStateBytes),
    },
  ];
}

export async function withoutGate<S extends { flows: unknown; transport: unknown; poolHolder: { get(): Promise<sql.ConnectionPool> } }>(stores: S, schema: string, maxStateBytes?: number): Promise<S> {
  const { SqlServerFlowStore } = await import('../../shared/stores/sqlserver/flow-store');
  const { SqlServerTransportStore } = await import('../../shared/stores/sqlserver/store');
  const { flowStateDdl, flowStepsDdl } = await import('../../shared/stores/sqlserver/flow-statements');
  const { schemaNames } = await import('../../shared/stores/schema-names');
  const { transportNames } = await import('../../shared/sql/identifiers');
  const names = schemaNames(transportNames(schema, DEFAULT_TRANSPORT_TABLE, 'sqlserver'), channelNames(schema, DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver');
  const pool = await stores.poolHolder.get();
  await pool.request().query(`IF SCHEMA_ID(N'${schema}') IS NULL EXEC (N'CREATE SCHEMA [${schema}]');`);
  const { hasGap, tdsEngine } = await import('./engine-gaps');
  // foreignKeyBin2: the engine refuses every write into a table keyed to the runs by a BIN2 column
  const noForeignKey = hasGap(await tdsEngine(), 'foreignKeyBin2');
  const steps = flowStepsDdl(names).map((b) => ({ ...b, lines: noForeignKey ? b.lines.map((l) => l.replace(/,\n\s*FOREIGN KEY [^\n]*/, '')) : b.lines }));
  // once per schema: a second opening of the same schema (another engine in the same test) finds the tables
  const exists = await pool.request().query(`SELECT OBJECT_ID(N'[${schema}].[${DEFAULT_FLOW_STATE_TABLE}]') AS id`);
  if ((exists.recordset[0] as { id: number | null }).id === null) for (const batch of [...flowStateDdl(names), ...steps]) await pool.request().query(batch.lines.join('\n'));
  const flows = new SqlServerFlowStore(stores.poolHolder as never, { names, logger: silentLogger, autoCreateSchema: true, verifyCatalog: false, maxStateBytes, carriesJobs: true });
  // the transport's table comes from the store's own batches too, at its first operation (a carrying write needs it first)
  const transport = new SqlServerTransportStore(stores.poolHolder as never, { schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema: true, logger: silentLogger, verifyCatalog: false });
  return { ...stores, flows, transport };
}
