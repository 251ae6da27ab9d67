// Runs once before the suite. With REQUIRE_PG=1 (CI) a missing or unreachable PostgreSQL server fails the
// run instead of letting its contract tests skip silently; REQUIRE_MSSQL=1 (the SQL Server workflow) does the same
// for MSSQL_CONNECTION_STRING.
import { Client } from 'pg';
import { endLeftovers, processes } from './leftover-processes';

export default async function setup(): Promise<() => Promise<void>> {
  // the processes before the run: the teardown fails naming any process of this checkout started since and left
  const all = processes();
  if (!all) console.warn('[teardown] the left-process check is skipped: no /proc on this system');
  const before = new Set((all ?? []).map((p) => p.pid));
  const teardown = async (): Promise<void> => {
    if (!all) return;
    const left = await endLeftovers(before);
    if (left.length > 0) {
      // vitest reports a teardown's error but keeps its exit code: the code is set here
      process.exitCode = 1;
      throw new Error(
        `the test run left ${left.length} process(es) running (now ended by id):\n` + left.map((p) => `  pid ${p.pid} (parent ${p.ppid}): ${p.cmdline.slice(0, 300)}`).join('\n'),
      );
    }
  };
  await requirePg();
  await requireMssql();
  return teardown;
}

/** REQUIRE_MSSQL=1 (the SQL Server workflow): an unset or unreachable MSSQL_CONNECTION_STRING fails the run. */
async function requireMssql(): Promise<void> {
  if (process.env.REQUIRE_MSSQL !== '1') return;
  const cs = process.env.MSSQL_CONNECTION_STRING;
  if (!cs) throw new Error('REQUIRE_MSSQL=1 but MSSQL_CONNECTION_STRING is not set');
  const sql = await import('mssql');
  const pool = new sql.ConnectionPool(cs);
  try {
    await pool.connect();
    await pool.request().query('SELECT 1 AS one');
  } catch (err) {
    throw new Error(`REQUIRE_MSSQL=1 but SQL Server at MSSQL_CONNECTION_STRING is unreachable: ${(err as Error).message}`);
  } finally {
    await pool.close().catch(() => undefined);
  }
}

async function requirePg(): Promise<void> {
  if (process.env.REQUIRE_PG !== '1') return;
  const url = process.env.PG_URL;
  if (!url) throw new Error('REQUIRE_PG=1 but PG_URL is not set');
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    throw new Error(`REQUIRE_PG=1 but PostgreSQL at ${url} is unreachable: ${(err as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
