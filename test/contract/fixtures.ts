// One harness per store for the contract suite: PGlite always, the PostgreSQL server when PG_URL is set,
// SQL Server when MSSQL_CONNECTION_STRING is set. Each harness gets its own schema and drops it.

import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { silentLogger } from '../../shared/log';
import { pgPoolClient, pgliteClient, type PgClient } from '../../shared/stores/postgres/client';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import type { TransportStore } from '../../shared/transport/types';

export type StoreName = 'pglite' | 'postgres' | 'sqlserver';

export interface RawRow {
  queue: string;
  attempts: number;
  lockId: string | null;
}

/** Test-only manipulations of the queue table, in the store's own dialect. */
export interface RawOps {
  /** A row written straight into the table (as an external system or an older host might), headers as given. */
  insert(id: string, queue: string, headersJson?: string): Promise<void>;
  row(id: string): Promise<RawRow | undefined>;
  countQueue(queue: string): Promise<number>;
  /** Entries of the queue in the lease roster of limited claims ({table}_leases), live or not yet pruned. */
  rosterSize(queue: string): Promise<number>;
  setLockId(id: string, lockId: string): Promise<void>;
  makeDue(id: string): Promise<void>;
  expireLease(id: string): Promise<void>;
  ageCreated(id: string, ms: number): Promise<void>;
  /** Creates the schema and a transport table whose payload_json has the wrong type (operator mistake). */
  createMisshapenTable(): Promise<void>;
}

export interface Harness {
  store: TransportStore;
  raw: RawOps;
  schema: string;
  /** A second store on its own connections (competing consumers); same schema. */
  openPeer(): Promise<TransportStore>;
  /** Another store on the same schema with its own options (e.g. AutoCreateSchema=false). */
  openWith(options: { autoCreateSchema: boolean }): Promise<TransportStore>;
  close(): Promise<void>;
}

export interface StoreFixture {
  name: StoreName;
  /** Why this store is not run; undefined = it runs. */
  skipReason?: string;
  /** Real concurrent sessions (PGlite is one session). */
  concurrent: boolean;
  create(options?: { autoCreateSchema?: boolean }): Promise<Harness>;
}

export const newSchema = () => `ar_test_${randomBytes(5).toString('hex')}`;

/** Why the PostgreSQL server and SQL Server harnesses do not run (undefined: they do). */
export const PG_SKIP_REASON = process.env.PG_URL ? undefined : 'PG_URL is not set (CI sets PG_URL=postgres://postgres@127.0.0.1:5432/test)';
export const MSSQL_SKIP_REASON = process.env.MSSQL_CONNECTION_STRING
  ? undefined
  : 'MSSQL_CONNECTION_STRING is not set (see test/compose.yml to start SQL Server 2022)';

function pgRaw(client: PgClient, schema: string, table = 'asyncresponse_transport_messages'): RawOps {
  const t = `"${schema}"."${table}"`;
  return {
    insert: async (id, queue, headersJson = '{}') => {
      await client.query(`INSERT INTO ${t} (id, queue, payload_json, headers_json) VALUES ($1, $2, '{}', $3)`, [id, queue, headersJson]);
    },
    row: async (id) => {
      const r = await client.query<{ queue: string; attempts: number; lock_id: string | null }>(
        `SELECT queue, attempts, lock_id FROM ${t} WHERE id = $1`,
        [id],
      );
      const row = r.rows[0];
      return row && { queue: row.queue, attempts: row.attempts, lockId: row.lock_id };
    },
    countQueue: async (queue) => {
      const r = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t} WHERE queue = $1`, [queue]);
      return r.rows[0]!.n;
    },
    rosterSize: async (queue) => {
      const r = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}"."${table}_leases" WHERE queue = $1`, [queue]);
      return r.rows[0]!.n;
    },
    setLockId: async (id, lockId) => {
      await client.query(`UPDATE ${t} SET lock_id = $2 WHERE id = $1`, [id, lockId]);
    },
    makeDue: async (id) => {
      await client.query(`UPDATE ${t} SET available_at = now() - interval '1 second' WHERE id = $1`, [id]);
    },
    expireLease: async (id) => {
      await client.query(`UPDATE ${t} SET locked_until = now() - interval '1 second' WHERE id = $1`, [id]);
    },
    ageCreated: async (id, ms) => {
      await client.query(`UPDATE ${t} SET created_at = created_at - $2::bigint * interval '1 millisecond' WHERE id = $1`, [id, ms]);
    },
    createMisshapenTable: async () => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(
        `CREATE TABLE ${t} (id uuid PRIMARY KEY, queue text NOT NULL, payload_json varchar(200) NOT NULL,
         headers_json text NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL DEFAULT now(),
         available_at timestamptz NOT NULL DEFAULT now(), locked_until timestamptz, lock_id uuid,
         attempts integer NOT NULL DEFAULT 0, dead_letter_reason text)`,
      );
    },
  };
}

const pgliteFixture: StoreFixture = {
  name: 'pglite',
  concurrent: false,
  async create(options = {}) {
    const { PGlite } = await import('@electric-sql/pglite');
    const db = new PGlite();
    await db.waitReady;
    const client = pgliteClient(db);
    const schema = newSchema();
    const store = new PostgresTransportStore(client, {
      schema,
      table: 'asyncresponse_transport_messages',
      autoCreateSchema: options.autoCreateSchema ?? true,
      logger: silentLogger,
    });
    return {
      store,
      raw: pgRaw(client, schema),
      schema,
      openPeer: async () => store,
      openWith: async (o) =>
        new PostgresTransportStore(client, { schema, table: 'asyncresponse_transport_messages', autoCreateSchema: o.autoCreateSchema, logger: silentLogger }),
      close: () => client.close(),
    };
  },
};

function postgresFixture(): StoreFixture {
  const url = process.env.PG_URL;
  return {
    name: 'postgres',
    concurrent: true,
    skipReason: PG_SKIP_REASON,
    async create(options = {}) {
      const schema = newSchema();
      const peers: PgClient[] = [];
      const open = (max = 10) => {
        const pool = new Pool({ connectionString: url, max });
        pool.on('error', () => undefined);
        const c = pgPoolClient(pool);
        peers.push(c);
        return c;
      };
      const client = open();
      const mk = (c: PgClient, autoCreateSchema = options.autoCreateSchema ?? true) =>
        new PostgresTransportStore(c, { schema, table: 'asyncresponse_transport_messages', autoCreateSchema, logger: silentLogger });
      const store = mk(client);
      return {
        store,
        raw: pgRaw(client, schema),
        schema,
        openPeer: async () => mk(open(4)),
        openWith: async (o) => mk(open(2), o.autoCreateSchema),
        close: async () => {
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          for (const c of peers) await c.close();
        },
      };
    },
  };
}

function sqlServerFixture(): StoreFixture {
  const cs = process.env.MSSQL_CONNECTION_STRING;
  return {
    name: 'sqlserver',
    concurrent: true,
    skipReason: MSSQL_SKIP_REASON,
    async create(options = {}) {
      const { sqlServerHarness } = await import('./sqlserver-harness');
      return sqlServerHarness(cs!, newSchema(), options.autoCreateSchema ?? true);
    },
  };
}

export function storeFixtures(): StoreFixture[] {
  return [pgliteFixture, postgresFixture(), sqlServerFixture()];
}

/** Prints why a store is skipped, once per file; REQUIRE_PG=1 turns a skipped PostgreSQL into a failure. */
export function announce(fixture: Pick<StoreFixture, 'name' | 'skipReason'>): boolean {
  if (fixture.name === 'postgres' && fixture.skipReason && process.env.REQUIRE_PG === '1') {
    throw new Error('REQUIRE_PG=1 but PG_URL is not set: the PostgreSQL contract tests must run');
  }
  if (fixture.skipReason) console.warn(`[contract:${fixture.name}] skipped: ${fixture.skipReason}`);
  return fixture.skipReason === undefined;
}
