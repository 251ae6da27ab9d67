// One small query interface over a pg Pool (real sessions) and PGlite (one embedded session), so the
// PostgreSQL statements serve both.

import type { Pool, PoolClient } from 'pg';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import { trackOpen } from '../open-handles';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  /** `name` makes it a server-side prepared statement on a pg connection (parsed and planned once). */
  query<R = Record<string, unknown>>(text: string, values?: unknown[], name?: string): Promise<QueryResult<R>>;
}

export interface PgClient extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn inside BEGIN/COMMIT on one session (ROLLBACK on throw). */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function pgPoolClient(pool: Pool): PgClient {
  const release = trackOpen('pg pool');
  return {
    kind: 'postgres',
    async query<R>(text: string, values?: unknown[], name?: string) {
      const r = await pool.query({ text, values: values as unknown[], name });
      return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
      const conn: PoolClient = await pool.connect();
      let broken = false;
      try {
        await conn.query('BEGIN');
        const tx: Queryable = {
          async query<R>(text: string, values?: unknown[]) {
            const r = await conn.query(text, values as unknown[]);
            return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
          },
        };
        const result = await fn(tx);
        await conn.query('COMMIT');
        return result;
      } catch (err) {
        try {
          await conn.query('ROLLBACK');
        } catch {
          broken = true;
        }
        throw err;
      } finally {
        conn.release(broken);
      }
    },
    close: async () => {
      release();
      await pool.end();
    },
  };
}

export function pgliteClient(db: PGlite): PgClient {
  const release = trackOpen('pglite');
  const wrap = (q: PGlite | Transaction): Queryable => ({
    async query<R>(text: string, values?: unknown[]) {
      const r = await q.query<R>(text, values as unknown[]);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    },
  });
  return {
    kind: 'pglite',
    ...wrap(db),
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    close: async () => {
      release();
      await db.close();
    },
  };
}
