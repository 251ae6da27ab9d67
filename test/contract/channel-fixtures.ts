// Channel harnesses for the contract suite: PGlite always, the PostgreSQL server with PG_URL, SQL Server with
// MSSQL_CONNECTION_STRING. Each gets its own schema and drops it.
import { Pool } from 'pg';
import { DEFAULT_CHANNEL_TABLES, type ChannelStore } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { pgPoolClient, pgliteClient, type PgClient } from '../../shared/stores/postgres/client';
import { PostgresChannelStore } from '../../shared/stores/postgres/channel-store';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import type { TransportStore } from '../../shared/transport/types';
import { MSSQL_SKIP_REASON, newSchema, PG_SKIP_REASON, type StoreName } from './fixtures';

export interface ChannelHarness {
  store: ChannelStore;
  /** Test-only: stamp a message as acknowledged at `at + offsetMs` with sequence `seq`. */
  forceAck(id: string, at: string, offsetMs: number, seq: string): Promise<void>;
  /** The transport store of the same schema (where routing enqueues callback jobs), created on first use. */
  transport(): Promise<TransportStore>;
  /** Another store on its own connections, same schema (a second process). */
  openPeer(): Promise<ChannelStore>;
  close(): Promise<void>;
}

export interface ChannelFixture {
  name: StoreName;
  skipReason?: string;
  create(): Promise<ChannelHarness>;
}

const pgForceAck = (client: PgClient, schema: string) => async (id: string, at: string, offsetMs: number, seq: string) => {
  await client.query(
    `UPDATE "${schema}"."${DEFAULT_CHANNEL_TABLES.messageTable}" SET acked_at = $2::timestamptz + $3::bigint * interval '1 millisecond', acked_seq = $4::bigint WHERE id = $1`,
    [id, at, offsetMs, seq],
  );
};

const pgTransport = (client: PgClient, schema: string) => {
  let made: Promise<TransportStore> | undefined;
  return () =>
    (made ??= (async () => {
      const t = new PostgresTransportStore(client, { schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema: true, logger: silentLogger });
      await t.ensureSchema();
      return t;
    })());
};

const pgStore = (client: PgClient, schema: string) =>
  new PostgresChannelStore(client, { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema: true, logger: silentLogger });

export function channelFixtures(): ChannelFixture[] {
  const pgUrl = process.env.PG_URL;
  const mssql = process.env.MSSQL_CONNECTION_STRING;
  return [
    {
      name: 'pglite',
      async create() {
        const { PGlite } = await import('@electric-sql/pglite');
        const db = new PGlite();
        await db.waitReady;
        const client = pgliteClient(db);
        const schema = newSchema();
        const store = pgStore(client, schema);
        return { store, forceAck: pgForceAck(client, schema), transport: pgTransport(client, schema), openPeer: async () => store, close: () => client.close() };
      },
    },
    {
      name: 'postgres',
      skipReason: PG_SKIP_REASON,
      async create() {
        const schema = newSchema();
        const clients: PgClient[] = [];
        const open = () => {
          const pool = new Pool({ connectionString: pgUrl, max: 4 });
          pool.on('error', () => undefined);
          const c = pgPoolClient(pool);
          clients.push(c);
          return pgStore(c, schema);
        };
        const store = open();
        return {
          store,
          forceAck: pgForceAck(clients[0]!, schema),
          transport: pgTransport(clients[0]!, schema),
          openPeer: async () => open(),
          close: async () => {
            await clients[0]!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
            for (const c of clients) await c.close();
          },
        };
      },
    },
    {
      name: 'sqlserver',
      skipReason: MSSQL_SKIP_REASON,
      async create() {
        const { sqlServerChannelHarness } = await import('./sqlserver-channel-harness');
        const schema = newSchema();
        const h = await sqlServerChannelHarness(mssql!, schema);
        const forceAck = async (id: string, at: string, offsetMs: number, seq: string) => {
          if (!/^[0-9a-f-]{36}$/i.test(id) || !/^-?\d+$/.test(seq) || !/^[0-9T:. -]+$/.test(at)) throw new Error('forceAck: bad test input');
          await h.raw.exec(
            `UPDATE [${schema}].[${DEFAULT_CHANNEL_TABLES.messageTable}] SET acked_at = DATEADD(millisecond, ${Math.trunc(offsetMs)}, CAST('${at}' AS datetime2(7))), acked_seq = ${seq} WHERE id = '${id}'`,
          );
        };
        return { store: h.store, forceAck, transport: h.transport, openPeer: async () => h.store, close: h.close };
      },
    },
  ];
}
