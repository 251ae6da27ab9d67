// Durable flows across processes on one PostgreSQL server (separate local hosts, as Function instances):
// - the host SIGKILLed while a run waits for its approval (parked, or still inside the in-process window); the
//   approval posted while no host runs, or to the restarted host: the run completes, its `reserve` step not run again;
// - a 3-day cool-off parks (no lease held, its wake-up a delayed job, no handler running) and wakes when made due;
// - two hosts draining the same flows queue never run one step twice.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, silentLogger, type Engine } from '../../shared';
import { DEFAULT_FLOW_STATE_TABLE } from '../../shared/stores/schema-names';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { newSchema, PG_SKIP_REASON } from '../contract/fixtures';
import { eventually, sleep } from '../support/messages';
import { checkedFetch, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

const PG_URL = process.env.PG_URL;
if (PG_SKIP_REASON) console.warn(`[e2e:flows-crash] skipped: ${PG_SKIP_REASON}`);
const root = path.resolve(__dirname, '../..');

interface Host {
  url: string;
  proc: ChildProcess;
  output: string[];
  exited: Promise<void>;
}
interface Run {
  status: string;
  result?: unknown;
  attempts: number;
  steps: Array<{ name: string; state: string; correlationId?: string; completedAt?: string; wakeAt?: string }>;
}

/** Approval requests as they arrive: `offline` answers 503 (nobody approves by itself), `auto` approves at once. */
interface Approver {
  url: string;
  jobs: Array<{ flowId: string; correlationId: string }>;
  server: Server;
}
async function startApprover(mode: 'offline' | 'auto'): Promise<Approver> {
  const a: Approver = { url: '', jobs: [], server: undefined as unknown as Server };
  a.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const job = JSON.parse(body) as { payload: { flowId: string }; correlationId: string };
      a.jobs.push({ flowId: job.payload.flowId, correlationId: job.correlationId });
      if (mode === 'offline') res.writeHead(503).end('{"error":"approver offline"}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"approved":true}');
    });
  });
  await new Promise<void>((r) => a.server.listen(0, '127.0.0.1', () => r()));
  a.url = `http://127.0.0.1:${(a.server.address() as AddressInfo).port}/approve`;
  return a;
}

describe.skipIf(PG_SKIP_REASON !== undefined)('durable flows across host crashes and hosts (PostgreSQL server)', () => {
  const schema = newSchema();
  const hosts: Host[] = [];
  let offline: Approver;
  let auto: Approver;
  let db: Client;
  let library: Engine | undefined;

  function env(): NodeJS.ProcessEnv {
    const e = { ...process.env };
    for (const k of Object.keys(e)) if (/^(DATABASE_URL|SQL_|PGLITE_|DRAIN_|QUEUE__|QUEUES|TOPIC|LOCAL_)/.test(k)) delete e[k];
    return {
      ...e,
      PORT: '0',
      DATABASE_URL: PG_URL,
      SQL_SCHEMA: schema,
      LOG_LEVEL: 'warn',
      ...TIMER_DRAIN_EVERY_SECOND,
      DRAIN_CALLBACKS_SCHEDULE: '*/1 * * * * *',
      QUEUES: 'approvals,auto',
      QUEUE__approvals__FORWARD_URL: offline.url,
      QUEUE__approvals__MAX_DELIVERY_ATTEMPTS: '100',
      QUEUE__approvals__REDELIVERY_DELAY_SECONDS: '2',
      QUEUE__auto__FORWARD_URL: auto.url,
    };
  }

  async function startHost(): Promise<Host> {
    const output: string[] = [];
    const proc = spawn(process.execPath, [path.join(root, 'dist/local/main.js')], { cwd: root, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`host did not start: ${output.join('')}`)), 60_000);
      let out = '';
      proc.stdout!.on('data', (c: Buffer) => {
        output.push(c.toString());
        out += c.toString();
        const m = /Host listening on (http:\/\/\S+?)\.? Press/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(`${m[1]!}/api`);
        }
      });
      proc.once('exit', (code) => reject(new Error(`host exited (${code}): ${output.join('')}`)));
    });
    const host = { url, proc, output, exited };
    hosts.push(host);
    await eventually(async () => ((await fetch(`${url}/health`)).status === 200 ? true : undefined), 'the host to be healthy', 30_000, 100);
    return host;
  }
  const kill = async (h: Host) => {
    if (h.proc.exitCode === null && h.proc.signalCode === null) h.proc.kill('SIGKILL');
    await h.exited;
  };
  const start = async (h: Host, id: string, input: unknown) => {
    const res = await checkedFetch(`${h.url}/flows/example-approval`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, input }) });
    expect(res.status, await res.clone().text()).toBe(202);
  };
  const read = async (h: Host, id: string, wait = 0): Promise<Run> => (await (await checkedFetch(`${h.url}/flows/example-approval/${id}?waitSeconds=${wait}`)).json()) as Run;
  const waitingFor = (h: Host, id: string, step: string, state: string) =>
    eventually(async () => {
      const r = await read(h, id);
      return r.steps.some((s) => s.name === step && s.state === state) ? r : undefined;
    }, `${id}: ${step} ${state}`, 30_000, 100);

  /** Past the in-process window (a quick answer would continue there): parked, its lease released. */
  const parked = (id: string) =>
    eventually(
      async () => ((await db.query(`SELECT lease_id FROM "${schema}".asyncresponse_flow_state WHERE flow_id = $1`, [id])).rows[0]?.lease_id === null ? true : undefined),
      `${id} to park`,
      30_000,
      100,
    );

  beforeAll(async () => {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
    offline = await startApprover('offline');
    auto = await startApprover('auto');
    db = new Client({ connectionString: PG_URL });
    await db.connect();
  }, 120_000);

  afterAll(async () => {
    for (const h of hosts) await kill(h);
    await library?.close();
    await db?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await db?.end();
    for (const a of [offline, auto]) await new Promise((r) => a?.server.close(r));
  });

  it('SIGKILLed while waiting for its approval; the approval stored while no host runs; the restarted host completes the run', async () => {
    const a = await startHost();
    await start(a, 'crash-1', { item: 'piano' });
    const waiting = await waitingFor(a, 'crash-1', 'approve', 'waiting-for-response');
    const correlationId = waiting.steps.find((s) => s.name === 'approve')!.correlationId!;
    const reserveAt = waiting.steps.find((s) => s.name === 'reserve')!.completedAt;
    await eventually(() => (offline.jobs.some((j) => j.flowId === 'crash-1') ? true : undefined), 'the approval request to be sent', 20_000);
    await parked('crash-1');
    await kill(a);
    // another instance (a program on the same database) stores the approval while no host runs
    library = await createEngine({ store: { kind: 'postgres', url: PG_URL!, pool: { max: 2 } }, schema, logger: silentLogger, queues: { approvals: { handler: async () => undefined } } });
    const stored = await library.channel.publishResponse({ correlationId, payload: { approved: true, by: 'while down' }, final: true }, { confirm: false });
    expect(stored.delivery).toBe('recovery'); // routed at once to the flow's internal registration (a callbacks job)
    const b = await startHost();
    const done = await read(b, 'crash-1', 60);
    expect(done.status).toBe('Succeeded');
    expect(done.result).toEqual({ item: 'piano', approval: { approved: true, by: 'while down' } });
    expect(done.steps.find((s) => s.name === 'reserve')!.completedAt).toBe(reserveAt);
    expect(new Set(offline.jobs.filter((j) => j.flowId === 'crash-1').map((j) => j.correlationId))).toEqual(new Set([correlationId])); // never re-sent with a new id
    await kill(b);
  }, 180_000);

  it('SIGKILLed while waiting; the approval posted to the restarted host completes the run', async () => {
    const a = await startHost();
    await start(a, 'crash-2', { item: 'harp' });
    const waiting = await waitingFor(a, 'crash-2', 'approve', 'waiting-for-response');
    const correlationId = waiting.steps.find((s) => s.name === 'approve')!.correlationId!;
    const reserveAt = waiting.steps.find((s) => s.name === 'reserve')!.completedAt;
    await parked('crash-2');
    await kill(a);
    const b = await startHost();
    const post = await checkedFetch(`${b.url}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ correlationId, payload: { approved: 'after restart' } }) });
    expect(post.status).toBe(202);
    const done = await read(b, 'crash-2', 60);
    expect(done.status).toBe('Succeeded');
    expect(done.result).toEqual({ item: 'harp', approval: { approved: 'after restart' } });
    expect(done.steps.find((s) => s.name === 'reserve')!.completedAt).toBe(reserveAt);
    await kill(b);
  }, 180_000);

  it('SIGKILLed inside the in-process window (lease held, not parked); the approval posted to another host completes the run once the dead lease lapses', async () => {
    const a = await startHost();
    await start(a, 'crash-window', { item: 'cello' });
    const waiting = await waitingFor(a, 'crash-window', 'approve', 'waiting-for-response');
    const correlationId = waiting.steps.find((s) => s.name === 'approve')!.correlationId!;
    const reserveAt = waiting.steps.find((s) => s.name === 'reserve')!.completedAt;
    // still waiting in process (it parks only after awaitInProcessMs, 3 s): the dead host's lease is what recovery waits out
    const held = await db.query<{ lease_id: string | null; left_ms: number }>(
      `SELECT lease_id, (extract(epoch FROM lease_expires_at_utc - clock_timestamp()) * 1000)::float8 AS left_ms FROM "${schema}".asyncresponse_flow_state WHERE flow_id = $1`,
      ['crash-window'],
    );
    await kill(a);
    expect(held.rows[0]?.lease_id).not.toBeNull();
    // waiting alone in process, the run holds its lease for the window (3 s) and a margin (5 s), not the full 60 s
    expect(held.rows[0]!.left_ms).toBeLessThanOrEqual(8_000);
    const b = await startHost();
    const post = await checkedFetch(`${b.url}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ correlationId, payload: { approved: 'inside the window' } }) });
    expect(post.status).toBe(202);
    // the flows job's lease (30 s) lapses first, then the other host replays the run, registers the await and routes
    // the response stored while nobody listened: nothing is lost, only late
    const done = await eventually(async () => {
      const r = await read(b, 'crash-window', 20);
      return r.status === 'Succeeded' ? r : undefined;
    }, 'crash-window to complete on the other host', 150_000, 500);
    expect(done.result).toEqual({ item: 'cello', approval: { approved: 'inside the window' } });
    expect(done.steps.find((s) => s.name === 'reserve')!.completedAt).toBe(reserveAt);
    expect(new Set(offline.jobs.filter((j) => j.flowId === 'crash-window').map((j) => j.correlationId))).toEqual(new Set([correlationId]));
    await kill(b);
  }, 240_000);

  it('a 3-day cool-off parks (no lease, its wake-up a delayed job, nothing running) and wakes when made due', async () => {
    const a = await startHost();
    await start(a, 'sleep-3d', { item: 'tent', approvalQueue: 'auto', coolOffSeconds: 3 * 86_400 });
    const parked = await waitingFor(a, 'sleep-3d', 'cool-off', 'sleeping');
    const wakeAt = parked.steps.find((s) => s.name === 'cool-off')!.wakeAt!;
    expect(Date.parse(wakeAt) - Date.now()).toBeGreaterThan(3 * 86_400_000 - 60_000);
    await sleep(1500); // the execution that parked has been acknowledged
    const flowTable = `"${schema}"."${DEFAULT_FLOW_STATE_TABLE}"`;
    const transportTable = `"${schema}"."${DEFAULT_TRANSPORT_TABLE}"`;
    const lease = await db.query(`SELECT lease_id FROM ${flowTable} WHERE flow_id = $1`, ['sleep-3d']);
    expect(lease.rows).toEqual([{ lease_id: null }]);
    // its one job: the cool-off's wake-up at wakeAt, not leased, not due (the approve step's 7-day deadline wake-up
    // went when its response settled the step)
    const jobs = await db.query(
      `SELECT locked_until, available_at <= now() AS due, abs(extract(epoch FROM available_at - $1::timestamptz)) < 5 AS at_wake FROM ${transportTable} WHERE queue = 'flows' AND payload_json LIKE '%"sleep-3d"%' ORDER BY available_at`,
      [wakeAt],
    );
    expect(jobs.rows).toEqual([{ locked_until: null, due: false, at_wake: true }]);
    // made due: the persisted wake instant and its delayed job both moved to now
    const now = new Date(Date.now() - 1000).toISOString();
    await db.query(`UPDATE ${flowTable} SET state_json = replace(state_json, $2, $3) WHERE flow_id = $1`, ['sleep-3d', `"wakeAt":"${wakeAt}"`, `"wakeAt":"${now}"`]);
    await db.query(`UPDATE ${transportTable} SET available_at = now() WHERE queue = 'flows' AND abs(extract(epoch FROM available_at - $1::timestamptz)) < 5`, [wakeAt]);
    const done = await read(a, 'sleep-3d', 30);
    expect(done.status).toBe('Succeeded');
    expect(done.result).toEqual({ item: 'tent', approval: { approved: true } });
    await kill(a);
  }, 180_000);

  it('two hosts on the same flows queue never run one step twice', async () => {
    const [x, y] = [await startHost(), await startHost()];
    const ids = Array.from({ length: 16 }, (_, i) => `pair-${i}`);
    await Promise.all(ids.map((id, i) => start(i % 2 === 0 ? x : y, id, { item: `item-${i}`, approvalQueue: 'auto' })));
    for (const [i, id] of ids.entries()) {
      const done = await read(i % 2 === 0 ? y : x, id, 60);
      expect(done.status, id).toBe('Succeeded');
    }
    // each run's approve step triggered exactly once (one request, one correlation id), whichever host ran it
    for (const id of ids) expect(auto.jobs.filter((j) => j.flowId === id), id).toHaveLength(1);
    const rows = await db.query<{ flow_id: string; state_json: string }>(`SELECT flow_id, state_json FROM "${schema}"."${DEFAULT_FLOW_STATE_TABLE}" WHERE flow_id LIKE 'pair-%'`);
    expect(rows.rows).toHaveLength(16);
    await kill(x);
    await kill(y);
  }, 240_000);
});
