// Limits that hold across instances (issue 17 §2): three local hosts (separate Node processes, as three Function
// instances) on one PostgreSQL server drain forward queues into one receiver on loopback that counts the requests
// it is serving at once. A queue limited to 3 never has more than 3 in flight across the hosts; a queue limited to
// 20 starts per second (the default burst, 2) is forwarded at 20/s within 10 %; a target answering 429 with Retry-After holds its queue
// back on every host for that long, and the job comes back with only the attempt it used spent.
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSchema } from '../contract/fixtures';
import { eventually } from '../support/messages';
import { checkedFetch, postJson } from './app-harness';
import { startHostProcess, stopHostProcess, type HostProcess as Host } from './host-process';

const PG_URL = process.env.PG_URL;
if (!PG_URL) console.warn('[e2e:queue-limits] skipped: PG_URL is not set (three processes need a shared database server)');
const root = path.resolve(__dirname, '../..');

interface Seen {
  path: string;
  id: string;
  attempt: number;
  at: number;
}

/** One receiver for every queue: the path names the queue; it holds each request `holdMs` and counts overlaps. */
async function startReceiver(holdMs: number) {
  const seen: Seen[] = [];
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  /** path → answers to give before the 200s (e.g. one 429 with Retry-After). */
  const scripted = new Map<string, Array<{ status: number; headers: Record<string, string> }>>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const p = req.url ?? '';
      const job = JSON.parse(body) as { id: string; attempt: number };
      seen.push({ path: p, id: job.id, attempt: job.attempt, at: Date.now() });
      const n = (inFlight.get(p) ?? 0) + 1;
      inFlight.set(p, n);
      most.set(p, Math.max(most.get(p) ?? 0, n));
      const answer = scripted.get(p)?.shift() ?? { status: 200, headers: {} };
      setTimeout(() => {
        inFlight.set(p, (inFlight.get(p) ?? 1) - 1);
        res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end('{}');
      }, holdMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { port, seen, most, scripted, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe.skipIf(!PG_URL)('queue limits across three hosts (one PostgreSQL server)', { timeout: 60_000 }, () => {
  const schema = newSchema();
  const hosts: Host[] = [];
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver(40);
    const target = (q: string) => `http://127.0.0.1:${receiver.port}/${q}`;
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
    const settings = {
      DATABASE_URL: PG_URL,
      SQL_SCHEMA: schema,
      LOG_LEVEL: 'error',
      DRAIN_TRIGGER: 'timer',
      LOCAL_AZURITE: 'false',
      QUEUES: 'limited,rated,throttled',
      DRAIN_WORKER_SCHEDULE: '*/1 * * * * *',
      DRAIN_BUDGET_SECONDS: '8',
      DRAIN_IDLE_GRACE_SECONDS: '1',
      HANDLER_CONCURRENCY: '8',
      QUEUE__limited__FORWARD_URL: target('limited'),
      QUEUE__limited__CONCURRENCY_LIMIT: '3',
      QUEUE__rated__FORWARD_URL: target('rated'),
      QUEUE__rated__RATE_LIMIT_PER_SECOND: '20',
      QUEUE__throttled__FORWARD_URL: target('throttled'),
    };
    // one after another: the first applies the migrations, the others find them applied
    for (let i = 0; i < 3; i++) hosts.push(await startHostProcess(settings, 30_000));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(hosts.map((h) => stopHostProcess(h)));
    await receiver?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  const publish = async (queue: string, n: number) => {
    const res = await checkedFetch(`${hosts[0]!.url}/queues/${queue}/messages`, postJson(Array.from({ length: n }, (_, i) => ({ payload: { i } }))));
    expect(res.status).toBe(201);
  };
  const received = (p: string) => receiver.seen.filter((s) => s.path === p);

  it('the route view shows the limits', async () => {
    const view = (await (await checkedFetch(`${hosts[1]!.url}/queues/limited`)).json()) as { policy: Record<string, unknown>; backoffUntil: unknown };
    expect(view.policy).toMatchObject({ concurrencyLimit: 3, rateLimitPerSecond: null, rateLimitBurst: null, concurrency: 8 });
    expect(view.backoffUntil).toBeNull();
    const rated = (await (await checkedFetch(`${hosts[2]!.url}/queues/rated`)).json()) as { policy: Record<string, unknown> };
    expect(rated.policy).toMatchObject({ concurrencyLimit: null, rateLimitPerSecond: 20, rateLimitBurst: 2 });
  });

  it('a queue limited to 3 never has more than 3 jobs in flight across the three hosts', async () => {
    await publish('limited', 60);
    await eventually(async () => new Set(received('/limited').map((s) => s.id)).size === 60, 'all 60 limited jobs forwarded', 40_000, 100);
    const byHost = new Set(received('/limited').map((s) => s.id)).size;
    console.log(`[e2e:queue-limits] limited: ${byHost} jobs, at most ${receiver.most.get('/limited')} in flight at once (limit 3)`);
    expect(receiver.most.get('/limited')).toBeLessThanOrEqual(3);
    expect(receiver.most.get('/limited')).toBe(3);
  });

  it('a queue limited to 20 starts per second is forwarded at 20/s within 10 %', async () => {
    await publish('rated', 60);
    await eventually(async () => received('/rated').length >= 60, 'all 60 rated jobs forwarded', 40_000, 100);
    const at = received('/rated').map((s) => s.at);
    const rate = (at.length - 1) / ((at.at(-1)! - at[0]!) / 1000);
    console.log(`[e2e:queue-limits] rated: ${at.length} starts at ${rate.toFixed(2)}/s (limit 20/s, default burst 2)`);
    expect(rate).toBeGreaterThanOrEqual(18);
    expect(rate).toBeLessThanOrEqual(22);
  });

  it('a 429 with Retry-After holds the queue on every host for that long; the job returns as attempt 2', async () => {
    receiver.scripted.set('/throttled', [{ status: 429, headers: { 'retry-after': '3' } }]);
    await publish('throttled', 1);
    await eventually(async () => received('/throttled').length === 1, 'the first forward', 20_000, 50);
    const first = received('/throttled')[0]!;
    const backoffShown = async () => {
      const view = (await (await checkedFetch(`${hosts[2]!.url}/queues/throttled`)).json()) as { backoffUntil: string | null };
      return view.backoffUntil !== null;
    };
    await eventually(backoffShown, 'the backoff to show in the route view', 5_000, 50);
    await publish('throttled', 4); // ready at once, but held back with the queue
    await eventually(async () => received('/throttled').length === 6, 'every throttled job forwarded (the first twice)', 30_000, 100);
    const later = received('/throttled').slice(1);
    const waited = Math.min(...later.map((s) => s.at)) - first.at;
    console.log(`[e2e:queue-limits] throttled: the next forward came ${waited} ms after the 429 (Retry-After 3 s)`);
    expect(waited).toBeGreaterThanOrEqual(2_900);
    expect(later.find((s) => s.id === first.id)?.attempt).toBe(2);
    expect(later.filter((s) => s.id !== first.id).every((s) => s.attempt === 1)).toBe(true);
  });
});
