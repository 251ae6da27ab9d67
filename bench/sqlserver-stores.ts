import type { TransportStoreOptions } from '../shared/stores/options';
import type { BenchStores } from './stores';

/** SQL Server bench stores: one pool per store so peers are real competing sessions. */
export async function openSqlServerBenchStores(connectionString: string, schema: string, options: TransportStoreOptions): Promise<BenchStores> {
  const { openSqlServerTransportStore } = await import('../shared/stores/sqlserver/store');
  const stores = [] as Array<Awaited<ReturnType<typeof openSqlServerTransportStore>>>;
  const open = async () => {
    const s = await openSqlServerTransportStore({ connectionString, poolMax: 16, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 60_000 }, options);
    stores.push(s);
    return s;
  };
  const store = await open();
  return {
    store,
    concurrent: true,
    openPeer: open,
    close: async () => {
      for (const s of stores) await s.close();
      console.log(`(schema ${schema} left in place on SQL Server; drop it with DROP TABLE/DROP SCHEMA when done)`);
    },
  };
}
