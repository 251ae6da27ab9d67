import { mkdirSync } from 'node:fs';
import { Pool } from 'pg';
import { pgPoolClient, pgliteClient, type PgClient } from './client';

export function openPgPool(url: string, pool: { max: number; min: number; connectTimeoutMs: number; requestTimeoutMs: number }): PgClient {
  const p = new Pool({
    connectionString: url,
    max: pool.max,
    min: pool.min,
    connectionTimeoutMillis: pool.connectTimeoutMs,
    statement_timeout: pool.requestTimeoutMs,
    idleTimeoutMillis: 30_000,
  });
  // An idle client's socket error must not crash the process; the pool replaces the client.
  p.on('error', () => undefined);
  return pgPoolClient(p);
}

/** The embedded default: a directory for `npm start`, memory:// (or '') for tests. */
export async function openPglite(dataDir: string): Promise<PgClient> {
  const { PGlite } = await import('@electric-sql/pglite');
  const inMemory = dataDir === '' || dataDir.startsWith('memory://');
  if (!inMemory) mkdirSync(dataDir, { recursive: true });
  const db = inMemory ? new PGlite() : new PGlite(dataDir);
  await db.waitReady;
  return pgliteClient(db);
}
