// Dedup keys, debounce and expiry over HTTP through the local host (issue 16 §3): POST /api/queues/{queue}/messages
// with dedupKey / dedupWindowSeconds / dedupMode / expiresAt / ttlSeconds, its answers (checked against the OpenAPI
// document by the harness) and its problem answers for bad input; an expired job is dead-lettered unrun.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, sleep } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

const received: string[] = [];
let target: Server;
let app: RunningApp;

beforeAll(async () => {
  target = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push((JSON.parse(body) as { id: string }).id);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    WORKER_FORWARD_URL: `http://127.0.0.1:${(target.address() as AddressInfo).port}/jobs`,
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => target?.close(r));
});

interface Published {
  id: string;
  queue: string;
  availableAt: string | null;
  duplicate?: true;
  debounced?: true;
}
const publish = async (body: unknown) => {
  const res = await app.api('queues/worker/messages', postJson(body));
  return { status: res.status, body: (await res.json()) as Published & { errors?: Array<{ field: string; message: string }>; detail?: string } };
};

describe('dedup keys, debounce and expiry over HTTP (local host)', () => {
  it('a second publish with a held key is a 200 duplicate of the first job; another key is a new job', async () => {
    const first = await publish({ payload: { n: 1 }, dedupKey: 'invoice-7', dedupWindowSeconds: 600, delaySeconds: 600 });
    expect(first.status).toBe(201);
    const second = await publish({ payload: { n: 2 }, dedupKey: 'invoice-7', dedupWindowSeconds: 600 });
    expect(second).toEqual({ status: 200, body: { id: first.body.id, queue: 'worker', availableAt: first.body.availableAt, duplicate: true } });
    const other = await publish({ payload: { n: 3 }, dedupKey: 'invoice-8', dedupWindowSeconds: 600, delaySeconds: 600 });
    expect(other.status).toBe(201);
    // a batch: the key twice acts as two publishes in order
    const batch = await app.api('queues/worker/messages', postJson([
      { payload: 1, dedupKey: 'invoice-9', dedupWindowSeconds: 600, delaySeconds: 600 },
      { payload: 2, dedupKey: 'invoice-9', dedupWindowSeconds: 600 },
    ]));
    expect(batch.status).toBe(201);
    const items = ((await batch.json()) as { items: Published[] }).items;
    expect(items[1]).toMatchObject({ id: items[0]!.id, duplicate: true });
    for (const id of [first.body.id, other.body.id, items[0]!.id]) expect((await app.api(`queues/worker/messages/${id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('debounce: the waiting job takes the new payload and due time (200, duplicate and debounced)', async () => {
    const first = await publish({ payload: { v: 1 }, dedupKey: 'sync-user-4', dedupWindowSeconds: 600, dedupMode: 'debounce', delaySeconds: 300 });
    const second = await publish({ payload: { v: 2 }, dedupKey: 'sync-user-4', dedupWindowSeconds: 600, dedupMode: 'debounce', delaySeconds: 600 });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, duplicate: true, debounced: true });
    expect(Date.parse(second.body.availableAt!) - Date.parse(first.body.availableAt!)).toBeGreaterThan(250_000);
    const waiting = (await (await app.api('queues/worker/messages?state=delayed')).json()) as { items: Array<{ id: string; payload: unknown }> };
    expect(waiting.items.filter((j) => j.id === first.body.id).map((j) => j.payload)).toEqual([{ v: 2 }]);
    expect((await app.api(`queues/worker/messages/${first.body.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('bad dedup and expiry fields are 400 problems naming each field; nothing is published', async () => {
    const cases: Array<[unknown, string]> = [
      [{ payload: 1, dedupKey: 'k', dedupWindowSeconds: -1 }, 'dedupWindowSeconds'],
      [{ payload: 1, dedupKey: 'k' }, 'dedupWindowSeconds'],
      [{ payload: 1, dedupKey: 'k', dedupWindowSeconds: 5, dedupMode: 'throttle' }, 'dedupMode'],
      [{ payload: 1, dedupKey: '', dedupWindowSeconds: 5 }, 'dedupKey'],
      [{ payload: 1, dedupWindowSeconds: 5 }, 'dedupWindowSeconds'],
      [{ payload: 1, expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt'],
      [{ payload: 1, expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ payload: 1, ttlSeconds: 0 }, 'ttlSeconds'],
      [{ payload: 1, ttlSeconds: 10, delaySeconds: 20 }, 'ttlSeconds'],
      [{ payload: 1, ttlSeconds: 10, expiresAt: '2999-01-01T00:00:00Z' }, 'ttlSeconds'],
    ];
    const before = (await (await app.api('queues/worker')).json()) as { ready: number; delayed: number };
    for (const [body, field] of cases) {
      const res = await app.api('queues/worker/messages', postJson(body));
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      const problem = (await res.json()) as { errors: Array<{ field: string }> };
      expect(problem.errors.map((e) => e.field), JSON.stringify(body)).toEqual([field]);
    }
    expect(await (await app.api('queues/worker')).json()).toMatchObject({ ready: before.ready, delayed: before.delayed });
  });

  it('a job not started by its expiry is dead-lettered with reason expired and never forwarded', async () => {
    expect((await app.api('queues/worker/pause', { method: 'POST' })).status).toBe(200);
    const expiring = await publish({ payload: { late: true }, ttlSeconds: 0.5 });
    expect(expiring.status).toBe(201);
    await sleep(800);
    expect((await app.api('queues/worker/resume', { method: 'POST' })).status).toBe(200);
    const dead = await eventually(async () => {
      const items = ((await (await app.api('queues/worker/deadletters')).json()) as { items: Array<{ id: string; reason: string }> }).items;
      return items.find((d) => d.id === expiring.body.id);
    }, 'the expired job in the dead letters', 15_000);
    expect(dead.reason).toBe('expired');
    expect(received).not.toContain(expiring.body.id);
    // a job that has not expired is forwarded as usual
    const live = await publish({ payload: { live: true }, ttlSeconds: 600 });
    await eventually(() => received.includes(live.body.id), 'the live job to be forwarded', 15_000);
  });
});
