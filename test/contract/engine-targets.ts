// The stores an engine contract test runs on: PGlite always, the PostgreSQL server when PG_URL is set (in a schema
// of its own, dropped by cleanup()).
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import type { StoreConnection } from '../../shared';

export interface EngineTarget {
  name: string;
  /** Why it does not run; undefined = it runs. */
  skip?: string;
  store(): StoreConnection;
  schema: string;
  cleanup(): Promise<void>;
}

export function engineTargets(schemaPrefix: string): EngineTarget[] {
  const pgSchema = `${schemaPrefix}_${randomBytes(4).toString('hex')}`;
  return [
    { name: 'pglite', store: () => ({ kind: 'pglite', dataDir: 'memory://' }), schema: 'public', cleanup: async () => undefined },
    {
      name: 'postgres',
      skip: process.env.PG_URL ? undefined : 'PG_URL is not set (CI sets PG_URL=postgres://postgres@127.0.0.1:5432/test)',
      store: () => ({ kind: 'postgres', url: process.env.PG_URL!, pool: { max: 4 } }),
      schema: pgSchema,
      cleanup: async () => {
        const pool = new Pool({ connectionString: process.env.PG_URL });
        await pool.query(`drop schema if exists ${pgSchema} cascade`);
        await pool.end();
      },
    },
  ];
}
