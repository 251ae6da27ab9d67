import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../log';
import type * as Pg from 'pg';
import type * as PGliteModule from '@electric-sql/pglite';
import { requirePeer } from '../../peer';
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
  const { Pool } = requirePeer<typeof Pg>('pg');
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

/** The file in a PGlite directory that names the process holding it open (PGlite's own postmaster.pid says -42). */
export const PGLITE_HOLDER_FILE = 'asyncresponse.holder.pid';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The live process other than this one that holds `dataDir` open, if any. */
export function pgliteHolder(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(join(dataDir, PGLITE_HOLDER_FILE), 'utf8'), 10);
  } catch {
    return undefined;
  }
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined;
}

/**
 * The embedded default: a directory for `npm start`, memory:// (or '') for tests. PGlite is one process's
 * database: a second process that opens the same directory (`npm run schema -- status` beside `npm start`) sees
 * a copy that the first one may overwrite, so opening a directory another live process holds is warned about.
 */
export async function openPglite(dataDir: string, logger?: Logger): Promise<PgClient> {
  const { PGlite } = requirePeer<typeof PGliteModule>('@electric-sql/pglite');
  const inMemory = dataDir === '' || dataDir.startsWith('memory://');
  if (!inMemory) {
    mkdirSync(dataDir, { recursive: true });
    const holder = pgliteHolder(dataDir);
    if (holder !== undefined) {
      const message =
        `the PGlite directory ${dataDir} is held by another process (pid ${holder}, e.g. \`npm start\`). PGlite is ` +
        'single-process: what this process reads may be stale and what it writes may be lost when that process ' +
        'writes; stop it first, or use PostgreSQL (DATABASE_URL) to share a database.';
      if (logger) logger.warn(message);
      else process.emitWarning(message);
    }
  }
  const db = inMemory ? new PGlite() : new PGlite(dataDir);
  await db.waitReady;
  await db.query(PLANNER_SETTINGS);
  if (inMemory) return pgliteClient(db);
  const holderFile = join(dataDir, PGLITE_HOLDER_FILE);
  try {
    writeFileSync(holderFile, String(process.pid));
  } catch {
    // a read-only directory: no holder mark, no warning for others
  }
  const client = pgliteClient(db);
  return {
    ...client,
    close: async () => {
      await client.close();
      try {
        if (readFileSync(holderFile, 'utf8') === String(process.pid)) rmSync(holderFile, { force: true });
      } catch {
        // gone already
      }
    },
  };
}
