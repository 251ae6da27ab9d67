// Per-queue routes and policies through the local host: two queues forward to their own receivers with their own
// attempt limits, a third drops instead of dead-lettering, and `orders` runs the in-code handler of
// handlers/orders.ts (the README example) with no HANDLER setting: the registration under its name is enough
// (issue 27: it ran echo without a word). GET /api/queues/{queue} shows each route and policy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJobReceiver, type JobReceiver } from '../support/job-receiver';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

interface Received {
  id: string;
  queue: string;
  attempt: number;
}

const atAlpha: Received[] = [];
const atBeta: Received[] = [];
let alpha: JobReceiver | undefined;
let beta: JobReceiver | undefined;
let app: RunningApp;

beforeAll(async () => {
  alpha = await startJobReceiver((job: Received) => atAlpha.push({ id: job.id, queue: job.queue, attempt: job.attempt }), { status: 503, body: '{"error":"busy"}' });
  beta = await startJobReceiver((job: Received) => atBeta.push({ id: job.id, queue: job.queue, attempt: job.attempt }), { status: 503, body: '{"error":"busy"}' });
  const [a, b] = [alpha.port, beta.port];
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    QUEUES: 'alpha,beta.jobs,quiet,orders',
    REDELIVERY_DELAY_SECONDS: '0',
    QUEUE__alpha__FORWARD_URL: `http://127.0.0.1:${a}/alpha?code=secret`,
    QUEUE__alpha__MAX_DELIVERY_ATTEMPTS: '2',
    QUEUE__beta_jobs__FORWARD_URL: `http://127.0.0.1:${b}/beta`,
    QUEUE__beta_jobs__MAX_DELIVERY_ATTEMPTS: '4',
    QUEUE__beta_jobs__HANDLER_CONCURRENCY: '2',
    QUEUE__quiet__FORWARD_URL: `http://127.0.0.1:${a}/alpha`,
    QUEUE__quiet__MAX_DELIVERY_ATTEMPTS: '1',
    QUEUE__quiet__DEAD_LETTER_ENABLED: 'false',
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  for (const r of [alpha, beta]) await r?.close();
});

const get = async (path: string) => (await app.api(path)).json() as Promise<Record<string, unknown>>;
const publish = async (queue: string, body: unknown) => ((await (await app.api(`queues/${queue}/messages`, postJson(body))).json()) as { id: string }).id;

describe('queues with their own routes and policies (local host over HTTP)', () => {
  it('each receiver gets only its queue’s jobs, and each queue dead-letters after its own attempts', async () => {
    const a = await publish('alpha', { payload: { to: 'alpha' } });
    const b = await publish('beta.jobs', { payload: { to: 'beta' } });
    await eventually(async () => ((await get('queues/alpha')).deadLettered === 1 && (await get('queues/beta.jobs')).deadLettered === 1 ? true : undefined), 'both jobs dead-lettered', 20_000);
    expect(atAlpha.filter((r) => r.queue === 'alpha')).toEqual([
      { id: a, queue: 'alpha', attempt: 1 },
      { id: a, queue: 'alpha', attempt: 2 },
    ]);
    expect(atBeta).toEqual([1, 2, 3, 4].map((attempt) => ({ id: b, queue: 'beta.jobs', attempt })));
    expect(atAlpha.some((r) => r.id === b)).toBe(false);
    const [dead] = ((await get('queues/beta.jobs/deadletters')) as { items: Array<{ id: string; reason: string }> }).items;
    expect(dead).toMatchObject({ id: b });
    expect(dead!.reason).toMatch(/answered 503/);
  }, 60_000);

  it('a queue with dead-lettering off deletes a job out of attempts', async () => {
    const q = await publish('quiet', { payload: { to: 'quiet' } });
    await eventually(() => (atAlpha.some((r) => r.id === q) ? true : undefined), 'the quiet job to be tried', 15_000);
    await eventually(async () => ((await get('queues/quiet')).ready === 0 && (await get('queues/quiet')).leased === 0 ? true : undefined), 'the row to go', 15_000);
    expect(await get('queues/quiet')).toMatchObject({ ready: 0, delayed: 0, leased: 0, deadLettered: 0 });
    expect(((await get('queues/quiet/deadletters')) as { items: unknown[] }).items).toEqual([]);
    expect(atAlpha.filter((r) => r.id === q)).toHaveLength(1);
  });

  it('runs the in-code handler registered in handlers/index.ts and answers through the channel', async () => {
    await publish('orders', { payload: { orderId: 'o-1', lines: [{ sku: 'tea', quantity: 3, unitPrice: 2 }] }, correlationId: 'order-o-1' });
    const res = await app.api('responses?correlationId=order-o-1&waitSeconds=15');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ correlationId: 'order-o-1', payload: { orderId: 'o-1', total: 6 }, final: true });
  });

  it('GET /api/queues/{queue} shows the effective route (host only) and policy next to the counts', async () => {
    const alphaView = await get('queues/alpha');
    expect(alphaView).toMatchObject({
      queue: 'alpha',
      route: { handler: 'forward', forwardHost: expect.stringMatching(/^127\.0\.0\.1:\d+$/), forwardTimeoutSeconds: 30 },
      policy: { maxDeliveryAttempts: 2, redeliveryDelaySeconds: 0, redeliveryMaxDelaySeconds: 300, lockTimeoutSeconds: 30, batchSize: 16, concurrency: 16, deadLetter: true },
    });
    expect(JSON.stringify(alphaView)).not.toContain('secret');
    expect(await get('queues/beta.jobs')).toMatchObject({ route: { handler: 'forward' }, policy: { maxDeliveryAttempts: 4, concurrency: 2 } });
    expect(await get('queues/quiet')).toMatchObject({ policy: { maxDeliveryAttempts: 1, deadLetter: false } });
    expect(await get('queues/orders')).toMatchObject({ route: { handler: 'code' }, policy: { maxDeliveryAttempts: 5 } });
    expect(await get('queues/callbacks')).toMatchObject({ route: { handler: 'callbacks' } });
  });
});
