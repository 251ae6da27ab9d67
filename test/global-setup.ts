// Runs once before the suite. With REQUIRE_PG=1 (CI) a missing or unreachable PostgreSQL server fails the
// run instead of letting its contract tests skip silently.
import { Client } from 'pg';

export default async function setup(): Promise<void> {
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
