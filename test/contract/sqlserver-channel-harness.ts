// The SQL Server channel harness of the contract suite (loaded only when MSSQL_CONNECTION_STRING is set): a
// channel store on its own schema and pool, raw T-SQL for test manipulations, and cleanup that drops the
// three tables, the sequence and the schema.

import type * as sql from 'mssql';
import { DEFAULT_CHANNEL_TABLES, type ChannelNames, type ChannelStore } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { SqlServerChannelStore } from '../../shared/stores/sqlserver/channel-store';
import { createSqlServerPool } from '../../shared/stores/sqlserver/connection';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { hasGap, shimsFor, tdsEngine } from './engine-gaps';
import { rewriteStatements } from './sqlserver-harness';
import type { TransportStore } from '../../shared/transport/types';
import { dropSqlServerSchema } from './sqlserver-drop-schema';

export interface SqlServerChannelHarness {
  store: ChannelStore;
  names: ChannelNames;
  raw: {
    /** Runs test-only T-SQL on an admin connection (no parameters; inputs must be validated by the caller). */
    exec(text: string): Promise<void>;
    /** Same, returning the first result set. */
    query<T = Record<string, unknown>>(text: string): Promise<T[]>;
  };
  /** The transport store of the same schema (where routing enqueues callback jobs), created on first use. */
  transport(): Promise<TransportStore>;
  /** Another channel store on its own pool and the same schema (a second process). */
  openPeer(options?: { autoCreateSchema?: boolean }): Promise<ChannelStore>;
  close(): Promise<void>;
}

export async function sqlServerChannelHarness(
  connectionString: string,
  schema: string,
  options: { autoCreateSchema?: boolean } = {},
): Promise<SqlServerChannelHarness> {
  const names = channelNames(schema, DEFAULT_CHANNEL_TABLES, 'sqlserver');
  const pools: sql.ConnectionPool[] = [];
  const stores: ChannelStore[] = [];
  // on an engine with shimmed gaps (engine-gaps.ts ENGINE_SHIMS) the stores' statements are rewritten as they are sent
  const shim = shimsFor(await tdsEngine());
  const open = (poolMax: number) => {
    const pool = createSqlServerPool({ connectionString, poolMax, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 });
    pools.push(pool);
    if (shim) rewriteStatements(pool, shim);
    return pool;
  };
  // on an engine whose catalog views differ (engine-gaps.ts, catalogViews) the stores skip the verification
  const verifyCatalog = !hasGap(await tdsEngine(), 'catalogViews');
  const storeOn = (pool: sql.ConnectionPool, autoCreateSchema: boolean) => {
    const store = new SqlServerChannelStore(pool, { names, autoCreateSchema, logger: silentLogger, ownsPool: false, verifyCatalog });
    stores.push(store);
    return store;
  };

  const admin = open(2);
  await admin.connect();
  const query = async <T,>(text: string): Promise<T[]> => (await admin.request().query(text)).recordset as unknown as T[];

  const storePool = open(10);
  const store = storeOn(storePool, options.autoCreateSchema ?? true);
  let transport: Promise<TransportStore> | undefined;
  return {
    store,
    transport: () =>
      (transport ??= (async () => {
        const t = new SqlServerTransportStore(storePool, { schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema: true, logger: silentLogger, verifyCatalog }, { ownsPool: false });
        await t.ensureSchema();
        return t;
      })()),
    names,
    raw: {
      exec: async (text) => {
        await admin.request().query(text);
      },
      query,
    },
    openPeer: async (peer = {}) => storeOn(open(4), peer.autoCreateSchema ?? true),
    close: async () => {
      try {
        await dropSqlServerSchema(admin, schema);
      } finally {
        for (const st of stores) await st.close().catch(() => undefined);
        for (const pool of pools) await pool.close().catch(() => undefined);
      }
    },
  };
}
