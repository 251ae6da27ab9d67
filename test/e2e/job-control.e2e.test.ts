// Job and queue control over HTTP through the local host (issue 16 §4): cancel a waiting job (204), refuse a
// running one without ?running=true (409), cancel it while it runs (202: the forward call is aborted at the next
// renewal and nothing retries it), reschedule, pause and resume, and the problem answers for bad input.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, sleep } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

// The worker forwards each job here; a job whose payload says hold is never answered (it runs until cancelled).
const received: Array<{ id: string; closedAt?: number }> = [];
let target: Server;
let app: RunningApp;

beforeAll(async () => {
  target = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const job = JSON.parse(body) as { id: string; payload: { hold?: boolean } };
      const seen: (typeof received)[number] = { id: job.id };
      received.push(seen);
      if (job.payload.hold) res.on('close', () => (seen.closedAt = Date.now()));
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    WORKER_FORWARD_URL: `http://127.0.0.1:${(target.address() as AddressInfo).port}/jobs`,
    LOCK_TIMEOUT_SECONDS: '3',
    MAX_DELIVERY_ATTEMPTS: '5',
    REDELIVERY_DELAY_SECONDS: '0',
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => target?.close(r));
});

const publish = async (payload: unknown, delaySeconds?: number) =>
  ((await (await app.api('queues/worker/messages', postJson({ payload, ...(delaySeconds ? { delaySeconds } : {}) }))).json()) as { id: string }).id;
const queue = async () => (await (await app.api('queues/worker')).json()) as { ready: number; delayed: number; leased: number; deadLettered: number; paused: boolean; pausedAt: string | null };
const post = (path: string, body?: unknown) => app.api(path, body === undefined ? { method: 'POST' } : postJson(body));

describe('job and queue control over HTTP (local host)', () => {
  it('DELETE cancels a delayed job (204), then finds nothing (404); bad ids and flags are 400 problems', async () => {
    const id = await publish({ later: true }, 600);
    expect((await queue()).delayed).toBe(1);
    expect((await app.api(`queues/worker/messages/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await queue()).delayed).toBe(0);
    const again = await app.api(`queues/worker/messages/${id}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(again.headers.get('content-type')).toMatch(/problem\+json/);
    expect((await app.api('queues/worker/messages/not-a-uuid', { method: 'DELETE' })).status).toBe(400);
    expect((await app.api(`queues/worker/messages/${id}?running=yes`, { method: 'DELETE' })).status).toBe(400);
    expect((await app.api(`queues/nope/messages/${id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('a running job is a 409 without ?running=true; with it a 202, the forward call is aborted and nothing retries it', async () => {
    const id = await publish({ hold: true });
    await eventually(() => received.some((r) => r.id === id), 'the forward call to start', 15_000);
    const refused = await app.api(`queues/worker/messages/${id}`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/\?running=true/);
    const cancelledAt = Date.now();
    const accepted = await app.api(`queues/worker/messages/${id}?running=true`, { method: 'DELETE' });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toEqual({ id, queue: 'worker', state: 'cancelling' });
    const call = await eventually(() => received.find((r) => r.id === id && r.closedAt !== undefined), 'the forward call to be aborted', 10_000);
    expect(call.closedAt! - cancelledAt).toBeLessThan(1000 + 1500); // one renewal (1 s) and some slack
    await eventually(async () => {
      const q = await queue();
      return q.leased === 0 && q.ready === 0;
    }, 'the cancelled job to be gone');
    await sleep(3500); // a lease's worth: a retry would call the target again
    expect(received.filter((r) => r.id === id)).toHaveLength(1);
    expect((await queue()).deadLettered).toBe(0);
  });

  it('reschedule moves a waiting job (200 with availableAt); 400 for a bad body; 404 once it is gone', async () => {
    const id = await publish({ n: 1 }, 600);
    const bad = await post(`queues/worker/messages/${id}/reschedule`, { delaySeconds: -1 });
    expect(bad.status).toBe(400);
    expect((await post(`queues/worker/messages/${id}/reschedule`, { delaySeconds: 1, availableAt: '2026-01-01T00:00:00Z' })).status).toBe(400);
    expect((await post(`queues/worker/messages/${id}/reschedule`, { availableAt: '2026-01-01 00:00' })).status).toBe(400);
    const res = await post(`queues/worker/messages/${id}/reschedule`, { availableAt: '2020-01-01T00:00:00Z' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id, queue: 'worker', availableAt: '2020-01-01T00:00:00.000Z' });
    await eventually(() => received.some((r) => r.id === id), 'the rescheduled job to run', 15_000);
    await eventually(async () => (await post(`queues/worker/messages/${id}/reschedule`, { delaySeconds: 5 })).status === 404, 'the job to be settled');
  });

  it('pause stops the drains while publishes are accepted; resume lets it drain; GET /queues shows the state', async () => {
    const paused = await post('queues/worker/pause');
    expect(paused.status).toBe(200);
    const state = (await paused.json()) as { queue: string; paused: boolean; pausedAt: string };
    expect(state).toMatchObject({ queue: 'worker', paused: true });
    const id = await publish({ n: 'paused' });
    await sleep(2500); // two timer drains
    expect(received.some((r) => r.id === id)).toBe(false);
    expect(await queue()).toMatchObject({ ready: 1, paused: true, pausedAt: state.pausedAt });
    const list = (await (await app.api('queues')).json()) as { items: Array<{ queue: string; paused: boolean }> };
    expect(list.items.find((q) => q.queue === 'worker')?.paused).toBe(true);
    expect(await (await post('queues/worker/resume')).json()).toEqual({ queue: 'worker', paused: false, pausedAt: null });
    await eventually(() => received.some((r) => r.id === id), 'the job to run after resume', 15_000);
    expect((await queue()).paused).toBe(false);
    expect((await post('queues/nope/pause')).status).toBe(404);
  });
});
