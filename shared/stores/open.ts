import type { ChannelNames, ChannelStore } from '../channel/types';
import type { ChannelConfig } from '../channel/options';
import type { FlowStateStore } from '../flows/store';
import { CALLBACK_QUEUE } from '../queue-names';
import type { Logger } from '../log';
import { channelNames, transportNames } from '../sql/identifiers';
import type { ScheduleStore } from '../schedules/types';
import type { TransportStore } from '../transport/types';
import type { SchemaMigrator } from './migration-plan';
import type { TransportStoreOptions } from './options';
import type { PgClient } from './postgres/client';
import { SchemaVersionGate } from './schema-gate';
import { schemaNames } from './schema-names';
import { requirePeer } from '../peer';
import type { PoolOptions, StoreSelection } from './selection';

export interface Stores {
  transport: TransportStore;
  channel: ChannelStore;
  /** Durable-flow ledgers (issue 15), in the transport's schema. */
  flows: FlowStateStore;
  /** The schedules table (recurring schedules); absent on stores without one (test doubles): schedules are then off. */
  schedules?: ScheduleStore;
  /** Closes the one pool the stores share. */
  close(): Promise<void>;
}

/** What opening the stores needs (the app's AppConfig has it; so do the engine's options). */
export interface StoreOpenOptions {
  store: StoreSelection;
  schema: string;
  transportTable: string;
  autoCreateSchema: boolean;
  /** PostgreSQL: claims and acks wait for the WAL flush too (TransportStoreOptions.durableClaimsAndAcks); default false. */
  durableClaimsAndAcks?: boolean;
  pool: PoolOptions;
  azureClientId?: string;
  channel: Pick<ChannelConfig, 'recoveryTable' | 'messageTable' | 'subscriberTable'>;
}

/** The stores and the schema versions they share (status / apply for `npm run schema`). */
export interface OpenedStores extends Stores {
  migrator: SchemaMigrator;
}

/**
 * Picks the store the settings name; drivers load lazily so an unused one costs no start-up time. Both stores
 * run one SchemaVersionGate before their own schema step: pending migrations are applied (AUTO_CREATE_SCHEMA)
 * or named with the command to run; a database newer than the app is refused.
 */
export async function openStores(config: StoreOpenOptions, logger: Logger): Promise<OpenedStores> {
  const transportOptions: TransportStoreOptions = {
    schema: config.schema,
    table: config.transportTable,
    autoCreateSchema: config.autoCreateSchema,
    durableClaimsAndAcks: config.durableClaimsAndAcks ?? false,
    logger,
  };
  const sel = config.store;
  const dialect = sel.kind === 'sqlserver' ? 'sqlserver' : 'postgres';
  const channelOptions = {
    names: channelNames(config.schema, config.channel, dialect),
    autoCreateSchema: config.autoCreateSchema,
    logger,
  };
  if (sel.kind === 'sqlserver') {
    requirePeer('mssql'); // the statements module needs it as it loads: a missing driver is named first
    const { openSqlServerStores } = await import('./sqlserver/open');
    return openSqlServerStores(
      {
        connectionString: sel.connectionString,
        server: sel.server,
        database: sel.database,
        user: sel.user,
        password: sel.password,
        port: sel.port,
        trustServerCertificate: sel.trustServerCertificate,
        poolMax: config.pool.max,
        poolMin: config.pool.min,
        connectTimeoutMs: config.pool.connectTimeoutMs,
        requestTimeoutMs: config.pool.requestTimeoutMs,
        clientId: config.azureClientId,
      },
      transportOptions,
      channelOptions,
    );
  }
  schemaNames(transportNames(config.schema, config.transportTable, 'postgres'), channelOptions.names, 'postgres'); // throws before a pool exists
  const { openPgPool, openPglite } = await import('./postgres/connect');
  const client = sel.kind === 'postgres' ? openPgPool(sel.url, config.pool) : await openPglite(sel.dataDir, logger);
  return openPostgresStoresOn(client, transportOptions, channelOptions);
}

/** Both PostgreSQL stores and their schema versions on one client (a pg pool or PGlite); close() closes it. */
export async function openPostgresStoresOn(
  client: PgClient,
  transportOptions: TransportStoreOptions,
  channelOptions: { names: ChannelNames; autoCreateSchema: boolean; logger: Logger },
  flowOptions: { maxStateBytes?: number } = {},
): Promise<OpenedStores> {
  const { PostgresTransportStore } = await import('./postgres/store');
  const { PostgresChannelStore } = await import('./postgres/channel-store');
  const { PostgresMigrator } = await import('./postgres/migrator');
  const { PostgresFlowStore } = await import('./postgres/flow-store');
  const { PostgresScheduleStore } = await import('./postgres/schedule-store');
  const names = schemaNames(transportNames(transportOptions.schema, transportOptions.table, 'postgres'), channelOptions.names, 'postgres');
  const migrator = new PostgresMigrator(client, names);
  const gate = new SchemaVersionGate(migrator, transportOptions.autoCreateSchema, transportOptions.logger);
  const schemaGate = () => gate.ensure();
  return {
    transport: new PostgresTransportStore(client, { ...transportOptions, schemaGate }),
    // callback jobs go to the transport's own table, in the same statement as the recovery claim
    channel: new PostgresChannelStore(client, { ...channelOptions, schemaGate, callbacks: { schema: transportOptions.schema, table: transportOptions.table, queue: CALLBACK_QUEUE } }),
    flows: new PostgresFlowStore(client, { names, logger: transportOptions.logger, schemaGate, maxStateBytes: flowOptions.maxStateBytes, carriesJobs: true }),
    schedules: new PostgresScheduleStore(client, names, schemaGate),
    migrator,
    close: () => client.close(),
  };
}
