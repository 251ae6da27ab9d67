// Both SQL Server stores over ONE connect-on-first-use pool: the transport and the channel share the app's
// connection budget (spec: size Max Pool Size for every instance sharing the server). The pool lives in one
// PoolHolder (pool-guard.ts): when the server refuses its logins, one rebuild makes a fresh pool for both stores.
// Neither store owns it; close() here closes it once, after both stores.

import type * as sql from 'mssql';
import type { ChannelNames } from '../../channel/types';
import type { Logger } from '../../log';
import { assertDistinct, transportNames } from '../../sql/identifiers';
import type { SchemaMigrator } from '../migration-plan';
import type { TransportStoreOptions } from '../options';
import { SchemaVersionGate } from '../schema-gate';
import { schemaNames } from '../schema-names';
import { channelStatements } from './channel-statements';
import { SqlServerChannelStore } from './channel-store';
import { createSqlServerPool, type SqlServerConnectionOptions } from './connection';
import { CALLBACK_QUEUE } from '../../queue-names';
import { SqlServerMigrator } from './migrator';
import { SqlServerScheduleStore } from './schedule-store';
import { createPoolHolder, type PoolHolder } from './pool-guard';
import { SqlServerTransportStore, type SqlServerStoreDeps } from './store';
import { SqlServerFlowStore } from './flow-store';

export interface SqlServerChannelOptions {
  names: ChannelNames;
  autoCreateSchema: boolean;
  logger: Logger;
}

export interface SqlServerStores {
  transport: SqlServerTransportStore;
  channel: SqlServerChannelStore;
  flows: SqlServerFlowStore;
  schedules: SqlServerScheduleStore;
  /** The shared pool's holder (a rebuild replaces the pool: ask it for the current one). */
  poolHolder: PoolHolder;
  /** The schema versions (status / apply); both stores run its gate before their own schema step. */
  migrator: SchemaMigrator;
  /** The pool in use now (health probes, tools); do not keep it. */
  readonly pool: sql.ConnectionPool;
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
  flowOptions: { maxStateBytes?: number; verifyCatalog?: boolean } = {},
): SqlServerStores {
  const transportNamesValidated = transportNames(transportOptions.schema, transportOptions.table, 'sqlserver');
  const channel = channelOptions.names;
  // callback jobs go to the transport's own table, in the same transaction as the recovery claim
  const callbacks = { schema: transportNamesValidated.schema, table: transportNamesValidated.table, queue: CALLBACK_QUEUE };
  channelStatements(channel, callbacks); // validates every channel name
  if (transportNamesValidated.schema.toLowerCase() === channel.schema.toLowerCase()) {
    assertDistinct([
      ['transport table', transportNamesValidated.table],
      ['RecoveryStateTable table', channel.recoveryTable],
      ['MessageTable table', channel.messageTable],
      ['SubscriberTable table', channel.subscriberTable],
      ['ack sequence', channel.ackSequence],
    ]);
  }
  const names = schemaNames(transportNamesValidated, channel, 'sqlserver');
  const logger = transportOptions.logger;
  const holder = createPoolHolder(() => createSqlServerPool(connection, logger), logger);
  const migrator = new SqlServerMigrator(holder, names);
  const gate = new SchemaVersionGate(migrator, transportOptions.autoCreateSchema, logger);
  const schemaGate = () => gate.ensure();
  const transport = new SqlServerTransportStore(holder, { ...transportOptions, schemaGate }, { ...deps, ownsPool: false });
  const channelStore = new SqlServerChannelStore(holder, { ...channelOptions, ownsPool: false, callbacks, schemaGate });
  const flows = new SqlServerFlowStore(holder, { names, logger, autoCreateSchema: transportOptions.autoCreateSchema, schemaGate, ...flowOptions, carriesJobs: true });
  let closing: Promise<void> | null = null;
  return {
    transport,
    channel: channelStore,
    flows,
    schedules: new SqlServerScheduleStore(holder, names, logger, schemaGate),
    poolHolder: holder,
    migrator,
    get pool() {
      return holder.current;
    },
    close: () =>
      (closing ??= (async () => {
        try {
          await transport.close();
          await channelStore.close();
          await flows.close();
        } finally {
          await holder.close();
        }
      })()),
  };
}
