import { Pool } from 'pg';
import { consoleLogger } from '../shared/log';
import { pgPoolClient, type PgClient } from '../shared/stores/postgres/client';
import { openPglite } from '../shared/stores/postgres/connect';
import { PostgresTransportStore } from '../shared/stores/postgres/store';
import type { TransportStore } from '../shared/transport/types';

export interface BenchStores {
  store: TransportStore;
  concurrent: boolean;
  openPeer(): Promise<TransportStore>;
  close(): Promise<void>;
}

const TABLE = 'asyncresponse_transport_messages';

export async function openBenchStores(schema: string): Promise<BenchStores> {
  const logger = consoleLogger('warn');
  const pgUrl = process.env.PG_URL ?? process.env.DATABASE_URL;
  const kind = process.env.BENCH_STORE ?? (process.env.MSSQL_CONNECTION_STRING ? 'sqlserver' : pgUrl ? 'postgres' : 'pglite');
  const options = { schema, table: TABLE, autoCreateSchema: true, logger };
  if (kind === 'pglite') {
    const client = await openPglite('memory://');
    const store = new PostgresTransportStore(client, options);
    return { store, concurrent: false, openPeer: async () => store, close: () => client.close() };
  }
  if (kind === 'postgres') {
    if (!pgUrl) throw new Error('BENCH_STORE=postgres needs PG_URL or DATABASE_URL');
    const clients: PgClient[] = [];
    const open = () => {
      const pool = new Pool({ connectionString: pgUrl, max: 16 });
      pool.on('error', () => undefined);
      const c = pgPoolClient(pool);
      clients.push(c);
      return new PostgresTransportStore(c, options);
    };
    const store = open();
    return {
      store,
      concurrent: true,
      openPeer: async () => open(),
      close: async () => {
        await clients[0]!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        for (const c of clients) await c.close();
      },
    };
  }
  if (kind === 'sqlserver') {
    const { openSqlServerBenchStores } = await import('./sqlserver-stores');
    return openSqlServerBenchStores(process.env.MSSQL_CONNECTION_STRING ?? '', schema, options);
  }
  throw new Error(`BENCH_STORE=${kind}: use postgres, pglite or sqlserver`);
}
