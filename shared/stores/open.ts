import type { AppConfig } from '../config';
import type { Logger } from '../log';
import type { TransportStore } from '../transport/types';
import type { TransportStoreOptions } from './options';

/** Picks the store the settings name; drivers load lazily so an unused one costs no start-up time. */
export async function openTransportStore(config: AppConfig, logger: Logger): Promise<TransportStore> {
  const options: TransportStoreOptions = {
    schema: config.schema,
    table: config.transportTable,
    autoCreateSchema: config.autoCreateSchema,
    logger,
  };
  const sel = config.store;
  if (sel.kind === 'sqlserver') {
    const { openSqlServerTransportStore } = await import('./sqlserver/store');
    return openSqlServerTransportStore(
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
      options,
    );
  }
  const { PostgresTransportStore } = await import('./postgres/store');
  if (sel.kind === 'postgres') {
    const { openPgPool } = await import('./postgres/connect');
    return new PostgresTransportStore(openPgPool(sel.url, config.pool), options);
  }
  const { openPglite } = await import('./postgres/connect');
  return new PostgresTransportStore(await openPglite(sel.dataDir), options);
}
