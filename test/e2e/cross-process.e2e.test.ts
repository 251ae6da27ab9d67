// Two local hosts (separate Node processes, as two Function instances) on one PostgreSQL server: a response
// published on one reaches a waiter on the other through the database alone.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { newSchema } from '../contract/fixtures';
import { eventually, sleep } from '../support/messages';
import { checkedFetch, TIMER_DRAIN_EVERY_SECOND } from './app-harness';
import { startHostProcess, stopHostProcess, type HostProcess as Host } from './host-process';

const PG_URL = process.env.PG_URL;
if (!PG_URL) console.warn('[e2e:cross-process] skipped: PG_URL is not set (two processes need a shared database server)');
const root = path.resolve(__dirname, '../..');

const startHost = (schema: string): Promise<Host> =>
  startHostProcess({ DATABASE_URL: PG_URL, SQL_SCHEMA: schema, ...TIMER_DRAIN_EVERY_SECOND, LOG_LEVEL: 'warn' }, 20_000);

describe.skipIf(!PG_URL)('cross-process delivery (two hosts, one PostgreSQL server)', () => {
  const schema = newSchema();
  let a: Host;
  let b: Host;

  /** Waits until a waiter of the id is registered in the database (its subscriber row), instead of a fixed pause. */
  async function waiterRegistered(correlationId: string): Promise<void> {
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    try {
      const sql = `SELECT count(*)::int AS n FROM "${schema}"."${DEFAULT_CHANNEL_TABLES.subscriberTable}" WHERE correlation_id = $1 AND expires_at > now()`;
      await eventually(async () => (await c.query<{ n: number }>(sql, [correlationId])).rows[0]!.n > 0, `the waiter on '${correlationId}' to register`);
    } finally {
      await c.end();
    }
  }

  beforeAll(async () => {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
    a = await startHost(schema);
    b = await startHost(schema);
  }, 90_000);

  afterAll(async () => {
    for (const h of [a, b]) await stopHostProcess(h);
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  it('a response published on host A reaches the waiting GET on host B within a poll interval', async () => {
    const waiting = checkedFetch(`${b.url}/responses?correlationId=xp-1&waitSeconds=20`);
    await waiterRegistered('xp-1'); // a fixed pause raced the registration on host B on a loaded machine
    const started = Date.now();
    const post = await checkedFetch(`${a.url}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ correlationId: 'xp-1', payload: { from: 'A' } }) });
    expect(post.status).toBe(202);
    expect(await post.json()).toMatchObject({ delivery: 'live' });
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ correlationId: 'xp-1', payload: { from: 'A' } });
    // polls are 250 ms apart (NOTIFY wakes it sooner); the bound leaves room for a loaded CI machine and still
    // tells a polled delivery from the GET's own 20 s timeout
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a job published on host A is answered to a waiter on host B', async () => {
    const waiting = checkedFetch(`${b.url}/responses?correlationId=xp-job&waitSeconds=20`);
    await sleep(200);
    const pub = await checkedFetch(`${a.url}/queues/worker/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: { n: 7 }, correlationId: 'xp-job' }) });
    expect(pub.status).toBe(201);
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ payload: { n: 7 } });
  });
  it('a queue paused on host A is not claimed by host B (nor A) while publishes land; resumed on A, it drains', async () => {
    const json = { 'content-type': 'application/json' };
    const stats = async (h: Host) => (await (await checkedFetch(`${h.url}/queues/worker`)).json()) as { ready: number; leased: number; paused: boolean };
    const paused = await checkedFetch(`${a.url}/queues/worker/pause`, { method: 'POST' });
    expect(paused.status).toBe(200);
    const pausedAt = Date.now();
    // published on B right after the pause: B's own drains (timer every second, NOTIFY wake) must not take them
    const pub = await checkedFetch(`${b.url}/queues/worker/messages`, { method: 'POST', headers: json, body: JSON.stringify(Array.from({ length: 5 }, (_, n) => ({ payload: { n } }))) });
    expect(pub.status).toBe(201);
    await sleep(Math.max(0, pausedAt + 2500 - Date.now()));
    expect(await stats(b)).toMatchObject({ ready: 5, leased: 0, paused: true });
    expect((await stats(a)).paused).toBe(true);
    const resumedAt = Date.now();
    expect((await checkedFetch(`${a.url}/queues/worker/resume`, { method: 'POST' })).status).toBe(200);
    await eventually(async () => {
      const s = await stats(b);
      return s.ready === 0 && s.leased === 0;
    }, 'the queue to drain after resume', 15_000);
    console.log(`[e2e:cross-process] 5 jobs drained ${Date.now() - resumedAt} ms after the resume on the other host`);
  });
});
