import { mkdirSync } from 'node:fs';
import { Pool } from 'pg';
import { pgPoolClient, pgliteClient, type PgClient } from './client';

/**
 * The claim must walk the dequeue index in order and stop at the first unleased rows. With stale statistics
 * (a burst into a table analyzed while nearly empty) the planner prefers a bitmap scan plus a sort of the
 * whole ready set: measured here at 15 ms per claim over 20k rows instead of 0.2 ms. Bitmap scans never
 * help this app's statements, so its sessions turn them off.
 */
export const PLANNER_SETTINGS = 'SET enable_bitmapscan = off';
/** The same, as a startup parameter (no extra round trip; a pooler that rejects `options` needs it set on the role). */
export const PLANNER_OPTIONS = '-c enable_bitmapscan=off';

export function openPgPool(url: string, pool: { max: number; min: number; connectTimeoutMs: number; requestTimeoutMs: number }): PgClient {
  const p = new Pool({
    connectionString: url,
    max: pool.max,
    min: pool.min,
    connectionTimeoutMillis: pool.connectTimeoutMs,
    statement_timeout: pool.requestTimeoutMs,
    idleTimeoutMillis: 30_000,
    options: PLANNER_OPTIONS,
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
  await db.query(PLANNER_SETTINGS);
  return pgliteClient(db);
}
