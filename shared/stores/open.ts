import type { ChannelStore } from '../channel/types';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { channelNames } from '../sql/identifiers';
import type { TransportStore } from '../transport/types';
import type { TransportStoreOptions } from './options';

export interface Stores {
  transport: TransportStore;
  channel: ChannelStore;
  /** Closes the one pool both stores share. */
  close(): Promise<void>;
}

/** What opening the stores needs (the app's AppConfig has it; so do the engine's options). */
export type StoreOpenOptions = Pick<AppConfig, 'store' | 'schema' | 'transportTable' | 'autoCreateSchema' | 'pool' | 'azureClientId'> & {
  channel: Pick<AppConfig['channel'], 'recoveryTable' | 'messageTable' | 'subscriberTable'>;
};

/** Picks the store the settings name; drivers load lazily so an unused one costs no start-up time. */
export async function openStores(config: StoreOpenOptions, logger: Logger): Promise<Stores> {
  const transportOptions: TransportStoreOptions = {
    schema: config.schema,
    table: config.transportTable,
    autoCreateSchema: config.autoCreateSchema,
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
  const { PostgresTransportStore } = await import('./postgres/store');
  const { PostgresChannelStore } = await import('./postgres/channel-store');
  const { openPgPool, openPglite } = await import('./postgres/connect');
  const client = sel.kind === 'postgres' ? openPgPool(sel.url, config.pool) : await openPglite(sel.dataDir);
  return {
    transport: new PostgresTransportStore(client, transportOptions),
    channel: new PostgresChannelStore(client, channelOptions),
    close: () => client.close(),
  };
}
