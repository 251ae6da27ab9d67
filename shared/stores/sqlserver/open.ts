// Both SQL Server stores over ONE connect-on-first-use pool: the transport and the channel share the app's
// connection budget (spec: size Max Pool Size for every instance sharing the server). Neither store owns the
// pool; close() here closes it once, after both stores.

import type * as sql from 'mssql';
import type { ChannelNames } from '../../channel/types';
import type { Logger } from '../../log';
import { assertDistinct, transportNames } from '../../sql/identifiers';
import type { TransportStoreOptions } from '../options';
import { channelStatements } from './channel-statements';
import { SqlServerChannelStore } from './channel-store';
import { createSqlServerPool, type SqlServerConnectionOptions } from './connection';
import { settlePoolConnect, SqlServerTransportStore, type SqlServerStoreDeps } from './store';

export interface SqlServerChannelOptions {
  names: ChannelNames;
  autoCreateSchema: boolean;
  logger: Logger;
}

export interface SqlServerStores {
  transport: SqlServerTransportStore;
  channel: SqlServerChannelStore;
  /** The shared pool (health probes, tools). */
  pool: sql.ConnectionPool;
  /** Closes both stores, then the pool; idempotent. */
  close(): Promise<void>;
}

/**
 * Opens the transport and channel stores on one new pool. Throws at once (before any pool exists) on an
 * invalid name or when a channel object would take the transport table's name in the same schema.
 */
export function openSqlServerStores(
  connection: SqlServerConnectionOptions,
  transportOptions: TransportStoreOptions,
  channelOptions: SqlServerChannelOptions,
  deps: Omit<SqlServerStoreDeps, 'ownsPool'> = {},
): SqlServerStores {
  const transportNamesValidated = transportNames(transportOptions.schema, transportOptions.table, 'sqlserver');
  const channel = channelOptions.names;
  channelStatements(channel); // validates every channel name
  if (transportNamesValidated.schema.toLowerCase() === channel.schema.toLowerCase()) {
    assertDistinct([
      ['transport table', transportNamesValidated.table],
      ['RecoveryStateTable table', channel.recoveryTable],
      ['MessageTable table', channel.messageTable],
      ['SubscriberTable table', channel.subscriberTable],
      ['ack sequence', channel.ackSequence],
    ]);
  }
  const pool = createSqlServerPool(connection, transportOptions.logger);
  const transport = new SqlServerTransportStore(pool, transportOptions, { ...deps, ownsPool: false });
  const channelStore = new SqlServerChannelStore(pool, { ...channelOptions, ownsPool: false });
  let closing: Promise<void> | null = null;
  return {
    transport,
    channel: channelStore,
    pool,
    close: () =>
      (closing ??= (async () => {
        try {
          await transport.close();
          await channelStore.close();
        } finally {
          await settlePoolConnect(pool);
          await pool.close();
        }
      })()),
  };
}
