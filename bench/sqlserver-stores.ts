import { DEFAULT_CHANNEL_TABLES } from '../shared/channel/types';
import { channelNames } from '../shared/sql/identifiers';
import type { TransportStoreOptions } from '../shared/stores/options';
import type { BenchStores } from './stores';

/** SQL Server bench stores: one pool per peer so peers are real competing sessions. */
export async function openSqlServerBenchStores(connectionString: string, schema: string, options: TransportStoreOptions): Promise<BenchStores> {
  const { openSqlServerStores } = await import('../shared/stores/sqlserver/open');
  const opened: Array<ReturnType<typeof openSqlServerStores>> = [];
  const open = () => {
    const s = openSqlServerStores(
      { connectionString, poolMax: 16, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 60_000 },
      options,
      { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'sqlserver'), autoCreateSchema: true, logger: options.logger },
    );
    opened.push(s);
    return s;
  };
  const first = open();
  return {
    store: first.transport,
    channel: first.channel,
    concurrent: true,
    openPeer: async () => open().transport,
    openChannelPeer: async () => open().channel,
    close: async () => {
      for (const s of opened) await s.close();
      console.log(`(schema ${schema} left in place on SQL Server; drop its tables and schema when done)`);
    },
  };
}
