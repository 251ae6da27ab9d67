import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

// The worker forwards each job to this server; it fails while `failing` is true.
let failing = true;
const received: Array<{ id: string; attempt: number; status: number }> = [];
let target: Server;
let app: RunningApp;

beforeAll(async () => {
  target = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const job = JSON.parse(body) as { id: string; attempt: number };
      const status = failing ? 500 : 200;
      received.push({ id: job.id, attempt: job.attempt, status });
      res.writeHead(status, { 'content-type': 'application/json' }).end(failing ? '{"error":"target down"}' : '{"done":true}');
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  const port = (target.address() as AddressInfo).port;
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    WORKER_FORWARD_URL: `http://127.0.0.1:${port}/jobs`,
    MAX_DELIVERY_ATTEMPTS: '2',
    REDELIVERY_DELAY_SECONDS: '0',
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => target?.close(r));
});

type DeadLetter = { id: string; sourceQueue: string; reason: string; payload: unknown; headers: Record<string, string>; createdAt: string };
const deadLetters = async () => ((await (await app.api('queues/worker/deadletters')).json()) as { items: DeadLetter[] }).items;

describe('failing handler → dead letter → requeue (local host over HTTP)', () => {
  it('ends in the dead-letter queue after MaxDeliveryAttempts, then runs again when requeued', async () => {
    const res = await app.api('queues/worker/messages', postJson({ payload: { order: 7 } }));
    const { id } = (await res.json()) as { id: string };
    const [dead] = await eventually(async () => {
      const items = await deadLetters();
      return items.length === 1 ? items : undefined;
    }, 'the job to be dead-lettered', 15_000);
    expect(received.filter((r) => r.id === id).map((r) => r.attempt)).toEqual([1, 2]);
    expect(dead).toMatchObject({ id, sourceQueue: 'worker', payload: { order: 7 } }); // it keeps the job's id
    expect(dead!.reason).toMatch(/answered 500/);
    expect(dead!.headers['AR-DeadLetter-Source-Queue']).toBe('worker');
    expect((await (await app.api('queues/worker')).json()) as object).toMatchObject({ ready: 0, leased: 0, deadLettered: 1 });

    failing = false;
    const requeue = await app.api(`queues/worker/deadletters/${dead!.id}/requeue`, { method: 'POST' });
    expect(requeue.status).toBe(200);
    expect(await requeue.json()).toEqual({ id: dead!.id });
    await eventually(() => received.some((r) => r.id === id && r.status === 200 && r.attempt === 1), 'the requeued job to run under its own id', 10_000);
    await eventually(async () => (await deadLetters()).length === 0, 'the dead-letter list to empty', 5000);
    expect((await app.api(`queues/worker/deadletters/${dead!.id}/requeue`, { method: 'POST' })).status).toBe(404);
  });

  it('a dead letter can be deleted; a second delete is a 404', async () => {
    failing = true;
    await app.api('queues/worker/messages', postJson({ payload: { order: 8 } }));
    const [dead] = await eventually(async () => {
      const items = await deadLetters();
      return items.length === 1 ? items : undefined;
    }, 'the second job to be dead-lettered', 15_000);
    expect((await app.api(`queues/worker/deadletters/${dead!.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await app.api(`queues/worker/deadletters/${dead!.id}`, { method: 'DELETE' })).status).toBe(404);
    expect(await deadLetters()).toEqual([]);
  });

  it('a correlated job that is dead-lettered answers its waiter with an error response', async () => {
    failing = true;
    const waiting = app.api('responses?correlationId=doomed-1&waitSeconds=20');
    await app.api('queues/worker/messages', postJson({ payload: { order: 9 }, correlationId: 'doomed-1' }));
    const res = await waiting;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { error?: string; final: boolean; payload: unknown };
    expect(body.final).toBe(true);
    expect(body.error).toMatch(/answered 500/);
    expect(body.payload).toBeNull();
  });
});
