// BENCH_ONLY=timer-drain: drains through the timer path (issue 9). The local host runs the real function table
// in-process with QUEUES=bench and WORKER_FORWARD_URL pointing at a counting HTTP receiver on 127.0.0.1 (204 for
// every job). BENCH_TIMER_JOBS jobs (default 20000) are published with the engine's publishBatch before the host
// starts, so the drain-worker timer (its schedule and drain settings as configured, by default every 10 s,
// concurrency 16, PREFETCH 16) finds them all waiting. Reported: jobs/s from the first receipt to the last, the
// jobs received twice and never, and the drain-worker invocations that started before the last receipt.
// Store: the PostgreSQL server of PG_URL / DATABASE_URL in a schema of its own (dropped at the end), else PGlite in
// memory. It sets the app's settings in process.env while it runs (and puts them back), after the other in-process parts.

import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'pg';
import { loadFunctionApp } from '../local/functions-core';
import { startLocalHost } from '../local/host';
import type { PublishInput } from '../shared/engine/create-engine';
import { getRuntime } from '../shared/runtime';

type Recorder = (what: string, value: string, note?: string) => void;

const QUEUE = 'bench';
const PUBLISH_CHUNK = 1000;

/** Counts every job the forward handler posts, by id, and keeps the time of each receipt. */
function countingReceiver() {
  const counts = new Map<string, number>();
  const times: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = performance.now();
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
      counts.set(id, (counts.get(id) ?? 0) + 1);
      times.push(now);
      res.writeHead(204).end();
    });
  });
  return { server, counts, times };
}

/**
 * Seconds spent receiving within each invocation (its first to its last receipt, receipts assigned to the latest
 * invocation started before them): the span without the waits for the next timer tick.
 */
function receivingSeconds(times: readonly number[], starts: readonly number[]): number {
  let total = 0;
  for (let i = 0; i < starts.length; i++) {
    const inside = times.filter((t) => t >= starts[i]! && (i + 1 === starts.length || t < starts[i + 1]!));
    if (inside.length > 0) total += inside[inside.length - 1]! - inside[0]!;
  }
  return total / 1000;
}

export async function benchTimerDrain(record: Recorder): Promise<void> {
  const jobs = Number(process.env.BENCH_TIMER_JOBS ?? 20_000);
  const pgUrl = process.env.PG_URL ?? process.env.DATABASE_URL;
  if (process.env.BENCH_STORE === 'sqlserver') {
    record('timer-drain', 'skipped', 'runs on PostgreSQL (PG_URL) or PGlite only');
    return;
  }
  const schema = `ar_bench_timer_${randomBytes(4).toString('hex')}`;
  const receiver = countingReceiver();
  await new Promise<void>((r) => receiver.server.listen(0, '127.0.0.1', r));
  const port = (receiver.server.address() as AddressInfo).port;
  const settings: Record<string, string> = {
    QUEUES: QUEUE,
    WORKER_FORWARD_URL: `http://127.0.0.1:${port}/jobs`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    ...(pgUrl ? { DATABASE_URL: pgUrl, SQL_SCHEMA: schema } : { PGLITE_DATA_DIR: 'memory://' }),
  };
  // The app reads its settings from process.env; they are put back afterwards, so the parts after this one (host
  // processes spawned with process.env) do not inherit them.
  const saved = Object.fromEntries(Object.keys(settings).map((k) => [k, process.env[k]]));
  Object.assign(process.env, settings);

  try {
    await drainThroughTimer(jobs, receiver, record);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await new Promise((r) => receiver.server.close(r));
    if (pgUrl) await dropSchema(pgUrl, schema);
  }
}

async function dropSchema(url: string, schema: string): Promise<void> {
  const pool = new Pool({ connectionString: url, max: 1 });
  try {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await pool.end();
  }
}

async function drainThroughTimer(jobs: number, receiver: ReturnType<typeof countingReceiver>, record: Recorder): Promise<void> {
  const table = await loadFunctionApp(() => import('../functions/index'));
  const drainWorker = table.timers.find((t) => t.name === 'drain-worker');
  if (!drainWorker) throw new Error('the function table has no drain-worker timer');
  const invocationStarts: number[] = [];
  const inflight = new Set<Promise<unknown>>();
  const original = drainWorker.handler;
  drainWorker.handler = (...args: unknown[]) => {
    invocationStarts.push(performance.now());
    const p = Promise.resolve(original(...args));
    inflight.add(p);
    void p.finally(() => inflight.delete(p)).catch(() => undefined);
    return p;
  };

  const rt = await getRuntime();
  const ids: string[] = [];
  const t0 = performance.now();
  for (let start = 0; start < jobs; start += PUBLISH_CHUNK) {
    const chunk: PublishInput[] = Array.from({ length: Math.min(PUBLISH_CHUNK, jobs - start) }, (_, k) => {
      const id = randomUUID();
      ids.push(id);
      return { id, payload: { i: start + k } };
    });
    await rt.engine.publishBatch(QUEUE, chunk);
  }
  const publishSecs = (performance.now() - t0) / 1000;
  const policy = rt.config.routes[QUEUE]!.policy;

  const warnings: string[] = [];
  const host = await startLocalHost({ table, port: 0, timers: true, logger: (line) => (/\b(warning|error):/.test(line) ? warnings.push(line) : undefined) });
  try {
    const deadline = Date.now() + Math.max(180_000, jobs * 5);
    while (receiver.counts.size < jobs && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    // a duplicate would come from the invocation still running: let it finish (it idles out after the grace)
    while (inflight.size > 0) await Promise.allSettled([...inflight]);
  } finally {
    await host.close();
  }

  const first = receiver.times[0] ?? 0;
  const last = receiver.times[receiver.times.length - 1] ?? 0;
  const missing = ids.filter((id) => !receiver.counts.has(id)).length;
  const duplicates = [...receiver.counts.values()].reduce((a, n) => a + n - 1, 0);
  const received = receiver.counts.size;
  const secs = (last - first) / 1000;
  const invocations = invocationStarts.filter((t) => t <= last).length;
  const cfg = rt.config;
  record(
    'drain through the drain-worker timer (forward → 204)',
    `${Number.isFinite(received / secs) ? (received / secs).toFixed(0) : '-'} jobs/s`,
    `${received} jobs in ${secs.toFixed(2)} s, first to last receipt; schedule ${cfg.drain.schedule}, budget ${cfg.drain.budgetMs / 1000} s, concurrency ${policy.concurrency}, prefetch ${policy.prefetch}`,
  );
  record('  … duplicates / missing', `${duplicates} / ${missing}`, `of ${jobs} published (${publishSecs.toFixed(1)} s with publishBatch before the host started)`);
  const busy = receivingSeconds(receiver.times, invocationStarts);
  record('  … drain-worker invocations it took', String(invocations), `receiving ${busy.toFixed(2)} s of them: ${(receiver.times.length / busy).toFixed(0)} jobs/s without the waits for the next tick`);
  if (warnings.length > 0) record('  … host warnings and errors', String(warnings.length), warnings[0]!.slice(0, 160));
}
