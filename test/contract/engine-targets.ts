// The stores the engine-level contract files run on: PGlite (in memory, schema public) always, the PostgreSQL server
// when PG_URL is set (a scratch schema named `{prefix}_{random}`, dropped by cleanup), and, for the files that ask for
// it, SQL Server when MSSQL_CONNECTION_STRING is set (the app's SQL Server stores on a scratch schema, injected:
// sqlserver-engine-stores.ts).
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import type { StoreConnection } from '../../shared';
import type { InjectedStores } from '../../shared/engine/options';
import { MSSQL_SKIP_REASON } from './fixtures';

export interface EngineTarget<S = StoreConnection> {
  name: 'pglite' | 'postgres' | 'sqlserver';
  /** Why this target is not run; undefined = it runs. */
  skip?: string;
  /**
   * What createEngine's `store` gets (with SQL Server, await it: its stores are opened here, on a schema of their
   * own, or with 'same' on the last opening's).
   */
  store(again?: 'same'): S;
  schema: string;
  cleanup(): Promise<void>;
}

export function engineTargets(prefix: string): EngineTarget[];
export function engineTargets(prefix: string, options: { sqlServer: true }): Array<EngineTarget<StoreConnection | Promise<InjectedStores>>>;
export function engineTargets(prefix: string, options: { sqlServer?: boolean } = {}): Array<EngineTarget<StoreConnection | Promise<InjectedStores>>> {
  const pgSchema = `${prefix}_${randomBytes(4).toString('hex')}`;
  const targets: Array<EngineTarget<StoreConnection | Promise<InjectedStores>>> = [
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
  if (options.sqlServer) {
    // a schema of its own per opening (the stores make their tables at their first operation), except where a test
    // opens a second engine on the first one's tables (`store('same')`: another process on the same database)
    const schemas: string[] = [];
    // every opening, closed again at cleanup: an engine closes its stores, but options createEngine refused leave
    // them open (a second close is a no-op)
    const openings: Array<InjectedStores['stores']> = [];
    targets.push({
      name: 'sqlserver',
      skip: MSSQL_SKIP_REASON,
      store: async (again?: 'same') => {
        const { openSqlServerEngineStores } = await import('./sqlserver-engine-stores');
        if (again !== 'same' || schemas.length === 0) schemas.push(`${prefix}_${randomBytes(4).toString('hex')}`);
        const opened = await openSqlServerEngineStores(process.env.MSSQL_CONNECTION_STRING!, schemas.at(-1)!);
        openings.push(opened.stores);
        return { stores: opened.stores };
      },
      schema: 'unused (the injected stores carry theirs)',
      cleanup: async () => {
        for (const stores of openings.splice(0)) await stores.close().catch(() => undefined);
        const { dropSqlServerEngineSchemas } = await import('./sqlserver-engine-stores');
        await dropSqlServerEngineSchemas(process.env.MSSQL_CONNECTION_STRING!, schemas);
      },
    });
  }
  return targets;
}
