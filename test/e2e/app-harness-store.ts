// Which store an e2e app runs on. E2E_STORE=sqlserver (with MSSQL_CONNECTION_STRING) runs the store-agnostic e2e
// files on SQL Server: an app the test starts on the in-memory PGlite gets that server instead, on a schema of
// its own. Files that need PostgreSQL itself (outbox, cross-process, schema upgrade) keep their DATABASE_URL.
import { randomBytes } from 'node:crypto';

let swapped = false;

export function storeSettings(settings: Record<string, string>): Record<string, string> {
  const mssql = process.env.MSSQL_CONNECTION_STRING;
  if (process.env.E2E_STORE !== 'sqlserver' || !mssql || settings.PGLITE_DATA_DIR !== 'memory://') return settings;
  swapped = true;
  const { PGLITE_DATA_DIR: _, ...rest } = settings;
  return { ...rest, SQL_CONNECTION_STRING: mssql, SQL_SCHEMA: `e2e_${randomBytes(4).toString('hex')}` };
}

/** Whether this file started an app on SQL Server in place of PGlite. */
export const e2eOnSqlServer = () => swapped;
