import { Pool } from 'pg';
import { consoleLogger } from '../shared/log';
import { pgPoolClient, type PgClient } from '../shared/stores/postgres/client';
import { openPglite, PLANNER_OPTIONS } from '../shared/stores/postgres/connect';
import { PostgresTransportStore } from '../shared/stores/postgres/store';
import type { TransportStore } from '../shared/transport/types';
import { DEFAULT_CHANNEL_TABLES, type ChannelStore } from '../shared/channel/types';
import { channelNames } from '../shared/sql/identifiers';
import { PostgresChannelStore } from '../shared/stores/postgres/channel-store';

export interface BenchStores {
  store: TransportStore;
  channel: ChannelStore;
  concurrent: boolean;
  openPeer(): Promise<TransportStore>;
  /** A channel store on its own pool: another "process" as far as the channel can tell. */
  openChannelPeer(): Promise<ChannelStore>;
  close(): Promise<void>;
}

const TABLE = 'asyncresponse_transport_messages';

export async function openBenchStores(schema: string): Promise<BenchStores> {
  const logger = consoleLogger('warn');
  const pgUrl = process.env.PG_URL ?? process.env.DATABASE_URL;
  const kind = process.env.BENCH_STORE ?? (process.env.MSSQL_CONNECTION_STRING ? 'sqlserver' : pgUrl ? 'postgres' : 'pglite');
  const options = { schema, table: TABLE, autoCreateSchema: true, logger };
  const pgChannel = (c: PgClient) =>
    new PostgresChannelStore(c, { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema: true, logger });
  if (kind === 'pglite') {
    const client = await openPglite('memory://');
    const store = new PostgresTransportStore(client, options);
    const channel = pgChannel(client);
    return { store, channel, concurrent: false, openPeer: async () => store, openChannelPeer: async () => channel, close: () => client.close() };
  }
  if (kind === 'postgres') {
    if (!pgUrl) throw new Error('BENCH_STORE=postgres needs PG_URL or DATABASE_URL');
    const clients: PgClient[] = [];
    const client = () => {
      const pool = new Pool({ connectionString: pgUrl, max: 16, options: PLANNER_OPTIONS });
      pool.on('error', () => undefined);
      const c = pgPoolClient(pool);
      clients.push(c);
      return c;
    };
    const open = () => new PostgresTransportStore(client(), options);
    const first = client();
    const store = new PostgresTransportStore(first, options);
    return {
      store,
      channel: pgChannel(first),
      concurrent: true,
      openPeer: async () => open(),
      openChannelPeer: async () => pgChannel(client()),
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
