// Topics through the local host (issue 8 §2): a topic with two subscriptions, each forwarding to its own receiver
// on loopback, gets every message exactly once per subscription (single and batch publishes); republishing an id
// delivers nothing twice; an unknown topic is a 404; a topic without subscriptions accepts and drops (subscriptions 0).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topicCopyId } from '../../shared/transport/topic-names';
import { startJobReceiver, type JobReceiver } from '../support/job-receiver';
import { eventually, sleep } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

interface Received {
  id: string;
  queue: string;
  payload: { n: number };
}

const atBilling: Received[] = [];
const atShipping: Received[] = [];
let billing: JobReceiver | undefined;
let shipping: JobReceiver | undefined;
let app: RunningApp;

beforeAll(async () => {
  billing = await startJobReceiver((job: Received) => atBilling.push({ id: job.id, queue: job.queue, payload: job.payload }), { status: 200, body: '{}' });
  shipping = await startJobReceiver((job: Received) => atShipping.push({ id: job.id, queue: job.queue, payload: job.payload }), { status: 200, body: '{}' });
  const [b, s] = [billing.port, shipping.port];
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    QUEUES: 'worker',
    TOPICS: 'orders,quiet',
    TOPIC__orders__SUBSCRIPTIONS: 'billing,shipping',
    QUEUE__orders_billing__FORWARD_URL: `http://127.0.0.1:${b}/billing`,
    QUEUE__orders_shipping__FORWARD_URL: `http://127.0.0.1:${s}/shipping`,
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  for (const r of [billing, shipping]) await r?.close();
});

const post = (path: string, body: unknown) => app.api(path, postJson(body));

describe('topics with durable subscriptions (local host over HTTP)', () => {
  it('each subscription receives every message once, single and batch; a republish delivers nothing twice', async () => {
    const ids = Array.from({ length: 12 }, () => randomUUID());
    const single = await post('topics/orders/messages', { id: ids[0], payload: { n: 0 } });
    expect(single.status).toBe(201);
    expect(await single.json()).toEqual({ id: ids[0], topic: 'orders', subscriptions: 2 });
    const batch = await post('topics/orders/messages', ids.slice(1).map((id, i) => ({ id, payload: { n: i + 1 } })));
    expect(batch.status).toBe(201);
    expect(((await batch.json()) as { items: unknown[] }).items).toEqual(ids.slice(1).map((id) => ({ id, topic: 'orders', subscriptions: 2 })));

    // a republish while the copies are stored (idempotency holds as long as they are, like a queue publish)
    const late = randomUUID();
    ids.push(late);
    expect((await post('topics/orders/messages', { id: late, payload: { n: 12 }, delaySeconds: 2 })).status).toBe(201);
    const again = await post('topics/orders/messages', { id: late, payload: { n: 12 } });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ id: late, topic: 'orders', subscriptions: 2, duplicate: true });

    const all = (log: Received[]) => (log.length >= ids.length ? true : undefined);
    await eventually(() => all(atBilling) && all(atShipping), 'both receivers to get every message', 20_000);
    await sleep(2500); // two drain ticks: a second copy would have been delivered by now

    for (const [log, queue] of [[atBilling, 'orders:billing'], [atShipping, 'orders:shipping']] as const) {
      expect(log.map((r) => r.id).sort()).toEqual(ids.map((id) => topicCopyId(id, queue)).sort());
      expect(log.every((r) => r.queue === queue)).toBe(true);
      expect(log.map((r) => r.payload.n).sort((a, b) => a - b)).toEqual(ids.map((_, i) => i));
    }
    const subs = (await (await app.api('topics/orders/subscriptions')).json()) as { topic: string; items: Array<{ subscription: string; queue: string; configured: boolean; ready: number }> };
    expect(subs.topic).toBe('orders');
    expect(subs.items.map((i) => [i.subscription, i.queue, i.configured, i.ready])).toEqual([
      ['billing', 'orders:billing', true, 0],
      ['shipping', 'orders:shipping', true, 0],
    ]);
    const topics = (await (await app.api('topics')).json()) as { items: Array<{ topic: string; subscriptions: unknown[] }> };
    expect(topics.items.map((t) => [t.topic, t.subscriptions.length])).toEqual([['orders', 2], ['quiet', 0]]);
    // ordinary queues: listed with the others
    const queues = (await (await app.api('queues')).json()) as { items: Array<{ queue: string }> };
    expect(queues.items.map((q) => q.queue)).toEqual(expect.arrayContaining(['worker', 'orders:billing', 'orders:shipping']));
  }, 60_000);

  it('an unknown topic is a 404; a topic without subscriptions accepts and drops (subscriptions 0)', async () => {
    const unknown = await post('topics/nosuch/messages', { payload: 1 });
    expect(unknown.status).toBe(404);
    expect((await app.api('topics/nosuch/subscriptions')).status).toBe(404);
    const dropped = await post('topics/quiet/messages', { payload: 1 });
    expect(dropped.status).toBe(201);
    expect(await dropped.json()).toMatchObject({ topic: 'quiet', subscriptions: 0 });
    expect(app.logs.some((l) => /topic 'quiet' has no subscription/.test(l))).toBe(true);
  });
});
