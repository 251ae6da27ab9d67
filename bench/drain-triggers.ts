// Bench parts for the drain triggers, on real local host processes (dist/local/main.js, as `npm start` runs them):
//   idle-cost   an idle app for BENCH_IDLE_SECONDS (default 600) in timer mode and in queue mode at default
//               settings; the billed execution time (bench/billing.ts) from each host's invocation log, per hour.
//   idle-start  BENCH_IDLE_START_JOBS (default 50) jobs published 2 s apart into an idle queue-mode app: the time
//               from the publish to the handler starting, p50 / p99.
//   scale-out   1, 2 and 4 host processes on one PostgreSQL (PG_URL) and one Azurite, a handler that waits 50 ms,
//               BENCH_SCALE_JOBS (default 6000) jobs published round-robin through the hosts: jobs/s, speed-up, lost.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startAzurite, type Azurite } from '../local/azurite';
import { billedMs, type Interval } from './billing';

type RecordFn = (what: string, value: string, note?: string) => void;
const ROOT = path.resolve(__dirname, '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Host {
  url: string;
  proc: ChildProcess;
  log: string;
  stop(): Promise<void>;
}

async function startHost(env: NodeJS.ProcessEnv): Promise<Host> {
  const log = path.join(mkdtempSync(path.join(tmpdir(), 'ar-host-')), 'invocations.jsonl');
  const proc = spawn(process.execPath, [path.join(ROOT, 'dist/local/main.js')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', LOCAL_AZURITE_LOCATION: 'memory', LOCAL_INVOCATION_LOG: log, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`host did not start: ${out}`)), 60_000);
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /Host listening on (http:\/\/\S+?)\.? Press/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    proc.once('exit', (code) => reject(new Error(`host exited (${code}): ${out}`)));
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    url,
    proc,
    log,
    async stop() {
      proc.kill('SIGINT');
      await exited;
    },
  };
}

function invocations(log: string): (Interval & { name: string })[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Interval & { name: string });
}

/** A handler endpoint (WORKER_FORWARD_URL) that records when each job arrived and answers after `waitMs`. */
async function startSink(waitMs: number): Promise<{ url: string; seen: Map<number, number[]>; close(): Promise<void> }> {
  const seen = new Map<number, number[]>();
  const server: Server = createServer((req, res) => {
    const at = Date.now();
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const n = (JSON.parse(body) as { payload: { n: number } }).payload.n;
      seen.set(n, [...(seen.get(n) ?? []), at]);
      setTimeout(() => res.end('{}'), waitMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen, close: () => new Promise((r) => server.close(() => r())) };
}

const store = (): NodeJS.ProcessEnv => {
  const pg = process.env.PG_URL ?? process.env.DATABASE_URL;
  return pg ? { DATABASE_URL: pg, SQL_SCHEMA: `ar_bench_${randomBytes(4).toString('hex')}` } : { PGLITE_DATA_DIR: 'memory://' };
};

async function publish(url: string, body: unknown): Promise<void> {
  const res = await fetch(`${url}/api/queues/worker/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`publish answered ${res.status}: ${await res.text()}`);
}

export async function benchIdleCost(record: RecordFn): Promise<void> {
  const seconds = Number(process.env.BENCH_IDLE_SECONDS ?? 600);
  const modes = [
    { mode: 'timer', env: { DRAIN_TRIGGER: 'timer' } },
    { mode: 'queue', env: {} }, // npm start's default: the embedded Azurite, DRAIN_TRIGGER=auto → queue
  ];
  // both idle side by side, from a warm start (the first request opens the runtime, as an instance that served one)
  const hosts = await Promise.all(modes.map(async (m) => ({ ...m, host: await startHost({ ...store(), ...m.env }) })));
  for (const h of hosts) await fetch(`${h.host.url}/api/health`);
  const from = Date.now();
  await sleep(seconds * 1000);
  const to = Date.now();
  for (const h of hosts) {
    const runs = invocations(h.host.log).filter((r) => r.start >= from && r.start < to && r.name !== 'health');
    const { billedMs: billed, periods } = billedMs(runs.map((r) => ({ start: r.start, end: Math.min(r.end, to) })));
    const perHour = (billed / (to - from)) * 60;
    const byName = Object.entries(runs.reduce<Record<string, number>>((acc, r) => ((acc[r.name] = (acc[r.name] ?? 0) + 1), acc), {} as never))
      .map(([n, c]) => `${n} ×${c}`)
      .join(', ');
    record(`idle-cost: ${h.mode} mode, billed execution time`, `${perHour.toFixed(2)} min/h`, `${periods} periods in ${seconds} s idle (${byName || 'no invocation'})`);
    await h.host.stop();
  }
}

export async function benchIdleStart(record: RecordFn): Promise<void> {
  const jobs = Number(process.env.BENCH_IDLE_START_JOBS ?? 50);
  const sink = await startSink(0);
  const host = await startHost({ ...store(), WORKER_FORWARD_URL: sink.url });
  try {
    await fetch(`${host.url}/api/health`);
    const latencies: number[] = [];
    for (let n = 1; n <= jobs; n++) {
      await sleep(2000); // idle again: the queue trigger has backed off to its polling ceiling
      const t0 = Date.now();
      await publish(host.url, { payload: { n } });
      while (!sink.seen.has(n) && Date.now() - t0 < 30_000) await sleep(5);
      latencies.push((sink.seen.get(n)?.[0] ?? Infinity) - t0);
    }
    latencies.sort((a, b) => a - b);
    const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)]!;
    record('idle-start: publish → handler start (queue mode)', `p50 ${p(0.5)} ms, p99 ${p(0.99)} ms`, `${jobs} jobs 2 s apart, max ${latencies[latencies.length - 1]} ms`);
  } finally {
    await host.stop();
    await sink.close();
  }
}

export async function benchScaleOut(record: RecordFn): Promise<void> {
  if (!(process.env.PG_URL ?? process.env.DATABASE_URL)) {
    record('scale-out', 'skipped', 'needs a PostgreSQL server shared by the processes (PG_URL)');
    return;
  }
  const jobs = Number(process.env.BENCH_SCALE_JOBS ?? 6000);
  const azurite: Azurite = await startAzurite({ location: 'memory' });
  let base = 0;
  try {
    for (const n of [1, 2, 4]) {
      const sink = await startSink(50);
      const env = { ...store(), AzureWebJobsStorage: azurite.connectionString, DRAIN_REQUEST_QUEUE: `scale-${n}-${randomBytes(3).toString('hex')}`, WORKER_FORWARD_URL: sink.url, DRAIN_BUDGET_SECONDS: '2' };
      const hosts = [await startHost(env)]; // the first creates the schema
      hosts.push(...(await Promise.all(Array.from({ length: n - 1 }, () => startHost(env)))));
      await Promise.all(hosts.map((h) => fetch(`${h.url}/api/health`)));
      const t0 = Date.now();
      const chunks = Math.ceil(jobs / 100);
      await Promise.all(
        Array.from({ length: chunks }, (_, c) =>
          publish(hosts[c % n]!.url, Array.from({ length: Math.min(100, jobs - c * 100) }, (_, i) => ({ payload: { n: c * 100 + i + 1 } }))),
        ),
      );
      while (sink.seen.size < jobs && Date.now() - t0 < 300_000) await sleep(20);
      const elapsed = (Math.max(...[...sink.seen.values()].map((v) => v[0]!)) - t0) / 1000;
      const rate = sink.seen.size / elapsed;
      if (n === 1) base = rate;
      const dup = [...sink.seen.values()].filter((v) => v.length > 1).length;
      const requests = hosts.reduce((acc, h) => acc + invocations(h.log).filter((r) => r.name === 'drain-requested').length, 0);
      record(`scale-out: ${n} process(es), handler 50 ms`, `${rate.toFixed(0)} jobs/s (×${(rate / base).toFixed(2)})`, `${jobs - sink.seen.size} lost, ${dup} run twice, ${requests} drain requests, ${elapsed.toFixed(1)} s`);
      await Promise.all(hosts.map((h) => h.stop()));
      await sink.close();
    }
  } finally {
    await azurite.stop();
  }
}
