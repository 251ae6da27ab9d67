// Job priority over HTTP through the local host (issue 16 §4): with the queue paused, a low-priority job and then a
// high-priority one are published; after the resume the worker's handler sees the high one first. A priority out of
// range is a 400 naming the field; the waiting list and the job lookup show the priority.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

const received: string[] = [];
let target: Server;
let app: RunningApp;

beforeAll(async () => {
  target = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push((JSON.parse(body) as { payload: { n: string } }).payload.n);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    WORKER_FORWARD_URL: `http://127.0.0.1:${(target.address() as AddressInfo).port}/jobs`,
    // one job at a time, so the handler's order is the claim's order
    BATCH_SIZE: '1',
    HANDLER_CONCURRENCY: '1',
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => target?.close(r));
});

const post = (path: string, body?: unknown) => app.api(path, postJson(body ?? {}));

describe('job priority over HTTP', () => {
  it('published low then high while paused, the handler sees high first after the resume', async () => {
    expect((await post('queues/worker/pause')).status).toBe(200);
    const low = await post('queues/worker/messages', { payload: { n: 'low' } });
    expect(low.status).toBe(201);
    const high = await post('queues/worker/messages', { payload: { n: 'high' }, priority: 10 });
    expect(high.status).toBe(201);
    const highId = ((await high.json()) as { id: string }).id;
    const waiting = (await (await app.api('queues/worker/messages?state=ready&order=oldest')).json()) as { items: Array<{ id: string; priority: number }> };
    expect(waiting.items.map((i) => i.priority)).toEqual([10, 0]);
    expect(waiting.items[0]!.id).toBe(highId);
    expect(await (await app.api(`jobs/${highId}`)).json()).toMatchObject({ id: highId, state: 'ready', priority: 10 });
    expect((await post('queues/worker/resume')).status).toBe(200);
    await eventually(() => received.length >= 2, 'both jobs to reach the handler', 15_000);
    expect(received).toEqual(['high', 'low']);
  });

  it('a priority that is not an integer from -32768 to 32767 is a 400 naming the field; nothing is published', async () => {
    for (const [priority, field] of [[32768, 'priority'], [1.5, 'priority'], ['3', 'priority']] as const) {
      const res = await post('queues/worker/messages', { payload: {}, priority });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { errors: Array<{ field: string; message: string }> };
      expect(body.errors.map((e) => e.field)).toEqual([field]);
    }
    const batch = await post('queues/worker/messages', [{ payload: {} }, { payload: {}, priority: -32769 }]);
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual(['[1].priority']);
    expect(((await (await app.api('queues/worker')).json()) as { ready: number }).ready).toBe(0);
  });
});
