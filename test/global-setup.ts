// Runs once before the suite. With REQUIRE_PG=1 (CI) a missing or unreachable PostgreSQL server fails the
// run instead of letting its contract tests skip silently.
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
  return teardown;
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
