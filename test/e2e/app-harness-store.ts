// Which store an e2e app runs on. E2E_STORE=sqlserver (with MSSQL_CONNECTION_STRING) runs the store-agnostic e2e
// files on SQL Server: an app the test starts on the in-memory PGlite gets that server instead, on a schema of
// its own. Files that need PostgreSQL itself (outbox, cross-process, schema upgrade) keep their DATABASE_URL.
import { randomBytes } from 'node:crypto';

let swapped = false;

/** E2E_KEEP_STORE=1 in a file's settings keeps it on its store (a file that reads rows with PostgreSQL's SQL). */
export function storeSettings(input: Record<string, string>): Record<string, string> {
  const { E2E_KEEP_STORE: keep, ...settings } = input;
  const mssql = process.env.MSSQL_CONNECTION_STRING;
  if (keep === '1' || process.env.E2E_STORE !== 'sqlserver' || !mssql || settings.PGLITE_DATA_DIR !== 'memory://') return settings;
  swapped = true;
  const { PGLITE_DATA_DIR: _, ...rest } = settings;
  return { ...rest, SQL_CONNECTION_STRING: mssql, SQL_SCHEMA: `e2e_${randomBytes(4).toString('hex')}` };
}

/** Whether this file started an app on SQL Server in place of PGlite. */
export const e2eOnSqlServer = () => swapped;

/**
 * Why this file's tests cannot run on the engine it was moved to (the version gate refuses an engine without the
 * UTF-8 collation), or undefined. The setup file skips each test with it; a beforeAll that checks the app's
 * health asks first.
 */
export async function e2eStoreGap(): Promise<string | undefined> {
  if (!swapped) return undefined;
  const { gapReason, tdsEngine } = await import('../contract/engine-gaps');
  return gapReason(await tdsEngine(), 'utf8Collation');
}
