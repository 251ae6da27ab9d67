// Databases for the schema-version contract tests: PGlite (one embedded session) and the PostgreSQL server
// (PG_URL; one schema per test, dropped after). The SQL Server runner shares the version logic
// (stores/migration-plan.ts) and its batches are pinned by test/unit/sqlserver.migration-statement-shapes.test.ts;
// there is no SQL Server here to run them.

import { Pool } from 'pg';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { openPostgresStoresOn, type OpenedStores } from '../../shared/stores/open';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { PostgresChannelStore } from '../../shared/stores/postgres/channel-store';
import { pgPoolClient, pgliteClient, type PgClient } from '../../shared/stores/postgres/client';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import { newSchema, PG_SKIP_REASON } from './fixtures';

export interface SchemaDb {
  schema: string;
  /** A session for raw SQL (and the stores of today's release). */
  client: PgClient;
  /** Stores + migrator on their own session (PostgreSQL) or the shared one (PGlite); close() leaves PGlite open. */
  open(autoCreateSchema: boolean): Promise<OpenedStores>;
  /** Today's release (no migrations table): its stores create version 1 as they always have. */
  createVersion1(): Promise<{ transport: PostgresTransportStore; channel: PostgresChannelStore }>;
  close(): Promise<void>;
}

export interface SchemaDbFixture {
  name: 'pglite' | 'postgres';
  skipReason?: string;
  create(): Promise<SchemaDb>;
}

const keepOpen = (c: PgClient): PgClient => ({ ...c, close: async () => undefined });

function db(schema: string, client: PgClient, session: () => PgClient, cleanup: () => Promise<void>): SchemaDb {
  const channel = (autoCreateSchema: boolean) => ({ names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema, logger: silentLogger });
  const transport = (autoCreateSchema: boolean) => ({ schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema, logger: silentLogger });
  return {
    schema,
    client,
    open: (autoCreateSchema) => openPostgresStoresOn(session(), transport(autoCreateSchema), channel(autoCreateSchema)),
    async createVersion1() {
      const t = new PostgresTransportStore(client, transport(true));
      const c = new PostgresChannelStore(client, channel(true));
      await t.ensureSchema();
      await c.ensureSchema();
      return { transport: t, channel: c };
    },
    close: cleanup,
  };
}

/** One PGlite per test file (its start-up takes seconds on a busy machine); each test has its own schema. */
let sharedPglite: Promise<PgClient> | undefined;

export const pgliteSchemaDb: SchemaDbFixture = {
  name: 'pglite',
  async create() {
    sharedPglite ??= (async () => {
      const { PGlite } = await import('@electric-sql/pglite');
      const pglite = new PGlite();
      await pglite.waitReady;
      return pgliteClient(pglite);
    })();
    const client = keepOpen(await sharedPglite);
    const schema = newSchema();
    return db(schema, client, () => client, async () => void (await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)));
  },
};

/** Closes the file's PGlite (afterAll). */
export async function closeSharedPglite(): Promise<void> {
  const c = await sharedPglite;
  sharedPglite = undefined;
  await c?.close();
}

/** `max` connections per opened session pool; `url`, another database of the server than PG_URL's. */
export function postgresSchemaDb(max = 4, url?: string): SchemaDbFixture {
  return {
    name: 'postgres',
    skipReason: PG_SKIP_REASON,
    async create() {
      const schema = newSchema();
      const pools: PgClient[] = [];
      const session = () => {
        const pool = new Pool({ connectionString: url ?? process.env.PG_URL, max });
        pool.on('error', () => undefined);
        const inner = pgPoolClient(pool);
        let closing: Promise<void> | undefined;
        const c: PgClient = { ...inner, close: () => (closing ??= inner.close()) };
        pools.push(c);
        return c;
      };
      const client = session();
      return db(schema, client, session, async () => {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        for (const c of pools) await c.close();
      });
    },
  };
}

export const schemaDbFixtures = (): SchemaDbFixture[] => [pgliteSchemaDb, postgresSchemaDb()];

/**
 * A database of its own on PG_URL's server, for a test whose VACUUM must see no other session's snapshot: test files
 * run side by side in PG_URL's database, and a transaction open there keeps the rows VACUUM should remove (since
 * PostgreSQL 14 the horizon of a table's VACUUM counts the sessions of its own database only).
 */
export async function privatePostgresDb(): Promise<{ fixture: SchemaDbFixture; drop(): Promise<void> }> {
  const admin = new Pool({ connectionString: process.env.PG_URL, max: 1 });
  const name = `ar_private_${newSchema().replace(/[^a-z0-9_]/gi, '').toLowerCase()}`.slice(0, 60);
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(process.env.PG_URL!);
  url.pathname = `/${name}`;
  return {
    fixture: postgresSchemaDb(4, url.toString()),
    drop: async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
