// The app's SQL Server stores for an engine-level contract file (engine-targets.ts): openSqlServerStores on a schema
// of its own, as the engine opens them. On a T-SQL engine the schema gate refuses (no UTF-8 collation: Babelfish) the
// stores open without the gate and the catalog check, each making its own tables from its batches, and the schedule
// store is left out (its table comes only from the schema versions); an engine's shimmed gaps are rewritten as the
// statements are sent (engine-gaps.ts).
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import type { InjectedStores } from '../../shared/engine/options';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { CALLBACK_QUEUE } from '../../shared/queue-names';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { hasGap, shimsFor, tdsEngine } from './engine-gaps';
import { withoutGate } from './flow-fixtures';
import { rewriteStatements } from './sqlserver-harness';
import { dropSqlServerSchema } from './sqlserver-drop-schema';

export async function openSqlServerEngineStores(connectionString: string, schema: string): Promise<InjectedStores> {
  const { openSqlServerStores } = await import('../../shared/stores/sqlserver/open');
  const { SqlServerChannelStore } = await import('../../shared/stores/sqlserver/channel-store');
  const engine = await tdsEngine();
  const verifyCatalog = !hasGap(engine, 'catalogViews');
  const names = channelNames(schema, DEFAULT_CHANNEL_TABLES, 'sqlserver');
  const opened = openSqlServerStores(
    { connectionString, poolMax: 20, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 },
    { schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema: true, logger: silentLogger, verifyCatalog },
    { names, autoCreateSchema: true, logger: silentLogger },
    {},
    { verifyCatalog },
  );
  const shim = shimsFor(engine);
  if (shim) rewriteStatements(await opened.poolHolder.get(), shim);
  let stores: InjectedStores['stores'] = opened;
  if (hasGap(engine, 'utf8Collation')) {
    const gateless = await withoutGate(opened, schema);
    const callbacks = { schema, table: DEFAULT_TRANSPORT_TABLE, queue: CALLBACK_QUEUE };
    const channel = new SqlServerChannelStore(opened.poolHolder, { names, autoCreateSchema: true, logger: silentLogger, ownsPool: false, callbacks, verifyCatalog: false });
    // made now, as the gate would have: a flow's first write carries its jobs into the transport's table
    await gateless.transport.ensureSchema();
    await channel.ensureSchema();
    stores = { transport: gateless.transport, flows: gateless.flows, channel, close: () => opened.close() };
  }
  return { stores };
}

/** Drops the schemas the openings made. */
export async function dropSqlServerEngineSchemas(connectionString: string, schemas: readonly string[]): Promise<void> {
  if (schemas.length === 0) return;
  const { createSqlServerPool } = await import('../../shared/stores/sqlserver/connection');
  const pool = createSqlServerPool({ connectionString, poolMax: 2, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 });
  await pool.connect();
  try {
    for (const schema of schemas) await dropSqlServerSchema(pool, schema);
  } finally {
    await pool.close();
  }
}
