// Queue mode (the default) with the DEFAULT timer schedules: no work waits for the 5-minute safety-net timer
// (`0 */5 * * * *`). Each case runs real local hosts (dist/local/main.js, as `npm start` runs them) on one Azurite:
// - a topic publish on PGlite starts its copies within a second or two (the publish announces every copy's queue);
// - rows inserted while no host was up run within seconds of the start (the start-up probe announces them);
// - a host SIGKILLed mid-drain, then restarted: every job runs within the lease + 5 s of the restart, in queue mode
//   (the start-up probe asks for a drain when the dead host's leases lapse) and in timer mode (its drains poll);
// - a second host that stays up while the first is killed takes the lapsed rows without a restart (its drain saw
//   the dead host's leases when it ended, and asked for a drain at their lapse).
// The lease is 20 s: longer than a killed drain request's return (host.json visibilityTimeout 10 s, plus the idle
// grace), so that return cannot be what rescues the rows. A kill is never placed within 40 s before a 5-minute
// slot, so the safety-net timer cannot be what rescues them either.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAzurite, type Azurite } from '../../local/azurite';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { newSchema } from '../contract/fixtures';
import { eventually, sleep } from '../support/messages';

const root = path.resolve(__dirname, '../..');
const PG_URL = process.env.PG_URL;
const PG_SKIP = PG_URL ? undefined : 'PG_URL is not set (a host killed mid-drain and its peer need a shared database server; CI sets PG_URL)';
if (PG_SKIP) console.warn(`[e2e:no-safety-net-wait] SIGKILL cases skipped: ${PG_SKIP}`);
const LEASE_SECONDS = 20;

let azurite: Azurite;
let sink: Sink;
const schemas: string[] = [];
const dirs: string[] = [];
const hosts: Host[] = [];

interface Reception {
  path: string;
  at: number;
  /** when the sink answered (undefined while held) */
  answeredAt?: number;
}

interface Sink {
  url: string;
  /** payload n → every time it reached the sink */
  seen: Map<number, Reception[]>;
  /** how long the sink holds a job before answering (a handler at work) */
  holdMs: number;
  server: Server;
}

async function startSink(): Promise<Sink> {
  const s: Sink = { url: '', seen: new Map(), holdMs: 0, server: undefined as unknown as Server };
  s.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const n = (JSON.parse(body) as { payload: { n: number } }).payload.n;
      const r: Reception = { path: req.url ?? '/', at: Date.now() };
      s.seen.set(n, [...(s.seen.get(n) ?? []), r]);
      setTimeout(() => {
        r.answeredAt = Date.now();
        res.end('{}');
      }, s.holdMs);
    });
  });
  await new Promise<void>((r) => s.server.listen(0, '127.0.0.1', () => r()));
  s.url = `http://127.0.0.1:${(s.server.address() as AddressInfo).port}`;
  return s;
}

interface Host {
  name: string;
  url: string;
  proc: ChildProcess;
  spawnedAt: number;
  output: string[];
  exited: Promise<void>;
}

/** The settings every host gets: only the store, the storage queue and the handler; the timers keep their defaults. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (/^(DATABASE_URL|SQL_|PGLITE_|DRAIN_|QUEUE__|TOPIC|LOCAL_|AzureWebJobsStorage)/.test(k)) delete env[k];
  return { ...env, PORT: '0', LOG_LEVEL: 'info', AzureWebJobsStorage: azurite.connectionString };
}

async function startHost(name: string, env: NodeJS.ProcessEnv): Promise<Host> {
  const output: string[] = [];
  const spawnedAt = Date.now();
  const proc = spawn(process.execPath, [path.join(root, 'dist/local/main.js')], { cwd: root, env: { ...baseEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`host ${name} did not start: ${output.join('')}`)), 60_000);
    let out = '';
    proc.stdout!.on('data', (c: Buffer) => {
      output.push(c.toString());
      out += c.toString();
      const m = /Host listening on (http:\/\/\S+?)\.? Press/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    proc.once('exit', (code) => reject(new Error(`host ${name} exited (${code}): ${output.join('')}`)));
  });
  const host = { name, url, proc, spawnedAt, output, exited };
  hosts.push(host);
  return host;
}

async function stopHost(h: Host, signal: NodeJS.Signals = 'SIGINT'): Promise<void> {
  if (h.proc.exitCode === null && h.proc.signalCode === null) h.proc.kill(signal);
  await h.exited;
}

async function post(url: string, body: unknown): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(201);
}

const queueName = () => `nowait-${randomBytes(4).toString('hex')}`;

/** Not within 40 s before a 5-minute slot of the safety-net timers: the safety-net timer must not be what runs the jobs. */
async function awayFromSafetyNet(): Promise<void> {
  const untilSlot = 300_000 - (Date.now() % 300_000);
  if (untilSlot < 40_000) await sleep(untilSlot + 1500);
}

beforeAll(async () => {
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
  azurite = await startAzurite({ location: 'memory' });
  sink = await startSink();
}, 120_000);

afterAll(async () => {
  for (const h of hosts) await stopHost(h, 'SIGKILL');
  await azurite?.stop();
  await new Promise((r) => sink?.server.close(r));
  if (PG_URL && schemas.length > 0) {
    const pool = new Pool({ connectionString: PG_URL, max: 1 });
    for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await pool.end();
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let next = 0;
const numbers = (count: number) => Array.from({ length: count }, () => ++next);

describe('queue mode, default timers, PGlite: nothing waits for the safety net', () => {
  it('a topic publish starts its copies within a second or two', { timeout: 90_000 }, async () => {
    const h = await startHost('topics', {
      PGLITE_DATA_DIR: 'memory://',
      DRAIN_REQUEST_QUEUE: queueName(),
      QUEUES: 'worker',
      TOPICS: 'orders',
      TOPIC__orders__SUBSCRIPTIONS: 'billing,shipping',
      QUEUE__orders_billing__FORWARD_URL: `${sink.url}/billing`,
      QUEUE__orders_shipping__FORWARD_URL: `${sink.url}/shipping`,
      WORKER_FORWARD_URL: `${sink.url}/worker`,
    });
    expect((await fetch(`${h.url}/api/health`)).status).toBe(200); // a warm instance
    await sleep(2000); // idle: no drain runs, the queue trigger polls at its ceiling
    const latencies: number[] = [];
    for (const n of numbers(3)) {
      const t0 = Date.now();
      await post(`${h.url}/api/topics/orders/messages`, { payload: { n } });
      const both = await eventually(() => {
        const paths = (sink.seen.get(n) ?? []).map((r) => r.path);
        return paths.includes('/billing') && paths.includes('/shipping') ? sink.seen.get(n) : undefined;
      }, `both copies of topic message ${n} to start`, 20_000, 20);
      latencies.push(Math.max(...both.map((r) => r.at)) - t0);
      await sleep(1500);
    }
    console.log(`[e2e:no-safety-net-wait] topic publish → both copies started: ${latencies.join(', ')} ms`);
    for (const ms of latencies) expect(ms).toBeLessThan(2500);
    await stopHost(h);
  });

  it('rows inserted while no host was up run within seconds of the start', { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'ar-nowait-pglite-'));
    dirs.push(dataDir);
    const env = { PGLITE_DATA_DIR: dataDir, DRAIN_REQUEST_QUEUE: queueName(), QUEUES: 'worker', WORKER_FORWARD_URL: `${sink.url}/worker` };
    const first = await startHost('pglite-first', env);
    expect((await fetch(`${first.url}/api/health`)).status).toBe(200); // the schema exists
    await stopHost(first);
    // published from SQL while no instance is up (scaled to zero): nobody announced them
    const ns = numbers(3);
    const { PGlite } = await import('@electric-sql/pglite');
    const db = await PGlite.create(dataDir);
    for (const n of ns) {
      await db.query(`INSERT INTO public.${DEFAULT_TRANSPORT_TABLE} (id, queue, payload_json) VALUES (gen_random_uuid(), 'worker', $1)`, [JSON.stringify({ n })]);
    }
    await db.close();
    await awayFromSafetyNet();
    const h = await startHost('pglite-second', env);
    await eventually(() => ns.every((n) => sink.seen.has(n)) || undefined, 'the rows inserted before the start to run', 30_000, 20);
    const after = Math.max(...ns.map((n) => sink.seen.get(n)![0]!.at)) - h.spawnedAt;
    console.log(`[e2e:no-safety-net-wait] rows inserted before start-up: all ran ${after} ms after the host was spawned`);
    expect(after).toBeLessThan(15_000); // the host's own start-up (PGlite opens in seconds here) plus about a second
    await stopHost(h);
  });
});

/** Publishes `count` jobs (batches through the given hosts in turn) and waits until `busy` of them are held at the sink. */
async function publishAndWaitBusy(through: Host[], count: number, busy: (n: number[]) => boolean): Promise<number[]> {
  const ns = numbers(count);
  const per = Math.ceil(count / through.length);
  await Promise.all(through.map((h, i) => post(`${h.url}/api/queues/worker/messages`, ns.slice(i * per, (i + 1) * per).map((n) => ({ payload: { n } })))));
  await eventually(() => busy(ns) || undefined, 'the hosts to be busy with held jobs', 30_000, 20);
  return ns;
}

/**
 * Every job ran to its end somewhere alive: answered before the kill, or started after it (on `survivor` when
 * given; a survivor's job in flight at the kill counts too). When the last start after the kill was.
 */
async function allRunAfterKill(ns: number[], killedAt: number, timeoutMs: number, survivor?: string): Promise<{ lastAt: number; rerun: number }> {
  const pending = () =>
    ns.filter((n) => {
      const rs = sink.seen.get(n) ?? [];
      const answeredBefore = rs.some((r) => r.answeredAt !== undefined && r.answeredAt < killedAt - 500);
      const ranAfter = rs.some((r) => (survivor === undefined ? r.at > killedAt : r.path === survivor && (r.at > killedAt || r.answeredAt !== undefined)));
      return !answeredBefore && !ranAfter;
    });
  try {
    await eventually(() => pending().length === 0 || undefined, 'every job to run after the kill', timeoutMs, 50);
  } catch (err) {
    const lines = pending().map((n) => `${n}: ${JSON.stringify((sink.seen.get(n) ?? []).map((r) => ({ ...r, at: r.at - killedAt, answeredAt: r.answeredAt && r.answeredAt - killedAt })))}`);
    throw new Error(`${(err as Error).message}; pending (times from the kill):\n${lines.join('\n')}\n${hosts.map((h) => `--- ${h.name}\n${h.output.join('').slice(-3000)}`).join('\n')}`);
  }
  const after = ns.flatMap((n) => (sink.seen.get(n) ?? []).filter((r) => r.at > killedAt).map((r) => r.at));
  return { lastAt: Math.max(...after), rerun: after.length };
}

describe.skipIf(Boolean(PG_SKIP))('a host killed mid-drain (PostgreSQL, default timers, lease 20 s)', () => {
  const pgEnv = (schema: string, trigger: 'queue' | 'timer', requestQueue: string, hostName: string): NodeJS.ProcessEnv => ({
    DATABASE_URL: PG_URL,
    SQL_SCHEMA: schema,
    DRAIN_TRIGGER: trigger,
    DRAIN_REQUEST_QUEUE: requestQueue,
    QUEUES: 'worker',
    WORKER_FORWARD_URL: `${sink.url}/${hostName}`,
    HANDLER_CONCURRENCY: '4',
    LOCK_TIMEOUT_SECONDS: String(LEASE_SECONDS),
  });

  for (const trigger of ['queue', 'timer'] as const) {
    it(`${trigger} mode: after a restart every job runs within the lease + 5 s`, { timeout: 150_000 }, async () => {
      const schema = newSchema();
      schemas.push(schema);
      const q = queueName();
      const host = `kill-${trigger}`;
      sink.holdMs = 3000;
      await awayFromSafetyNet();
      const a = await startHost(`${host}-a`, pgEnv(schema, trigger, q, host));
      const ns = await publishAndWaitBusy([a], 16, (ns) => ns.filter((n) => sink.seen.get(n)?.some((r) => r.answeredAt === undefined)).length >= 4);
      const killedAt = Date.now();
      a.proc.kill('SIGKILL');
      await a.exited;
      sink.holdMs = 0;
      const b = await startHost(`${host}-b`, pgEnv(schema, trigger, q, host));
      const restartedAt = b.spawnedAt;
      const { lastAt, rerun } = await allRunAfterKill(ns, killedAt, (LEASE_SECONDS + 30) * 1000);
      const within = lastAt - restartedAt;
      console.log(`[e2e:no-safety-net-wait] ${trigger} mode: SIGKILL, restart ${restartedAt - killedAt} ms later; ${rerun} job run(s) after it, the last ${within} ms after the restart (lease ${LEASE_SECONDS} s)`);
      expect(rerun).toBeGreaterThanOrEqual(4); // at least the held ones ran again
      expect(within).toBeLessThan((LEASE_SECONDS + 5) * 1000);
      await stopHost(b);
    });
  }

  it('queue mode: a second host that stays up takes the lapsed rows of the killed one, without a restart', { timeout: 150_000 }, async () => {
    const schema = newSchema();
    schemas.push(schema);
    const q = queueName();
    sink.holdMs = 3000;
    const a = await startHost('pair-a', pgEnv(schema, 'queue', q, 'pair-a'));
    const b = await startHost('pair-b', pgEnv(schema, 'queue', q, 'pair-b'));
    await awayFromSafetyNet();
    const held = (path: string) => (ns: number[]) => ns.some((n) => sink.seen.get(n)?.some((r) => r.path === `/${path}` && r.answeredAt === undefined));
    const ns = await publishAndWaitBusy([a, b], 40, (ns) => held('pair-a')(ns) && held('pair-b')(ns));
    const heldByA = ns.filter((n) => sink.seen.get(n)?.some((r) => r.path === '/pair-a' && r.answeredAt === undefined));
    const killedAt = Date.now();
    a.proc.kill('SIGKILL');
    await a.exited;
    sink.holdMs = 0;
    const { lastAt } = await allRunAfterKill(ns, killedAt, (LEASE_SECONDS + 30) * 1000, '/pair-b');
    const within = lastAt - killedAt;
    console.log(`[e2e:no-safety-net-wait] pair: ${heldByA.length} job(s) held by the killed host; every job done by the survivor ${within} ms after the kill (lease ${LEASE_SECONDS} s)`);
    for (const n of heldByA) expect(sink.seen.get(n)!.some((r) => r.path === '/pair-b' && r.at > killedAt), `job ${n} ran on the survivor`).toBe(true);
    expect(within).toBeLessThan((LEASE_SECONDS + 5) * 1000);
    await stopHost(b);
  });
});
