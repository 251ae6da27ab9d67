// GET /api/queues/{queue}/messages through the local host (every answer checked against the OpenAPI document by
// the harness): defaults (ready, oldest, 20), delayed and newest, top, the correlation id and payload as
// published, a 400 naming each bad query field, a 404 for an unknown queue. The worker's drain never runs here,
// so published jobs stay waiting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../support/messages';
import { postJson, startApp, type RunningApp } from './app-harness';

let app: RunningApp;
beforeAll(async () => {
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    QUEUES: 'worker',
    WORKER_FORWARD_URL: 'http://127.0.0.1:9/never-called',
    DRAIN_WORKER_SCHEDULE: '0 0 0 1 1 *',
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
});

type Listing = { queue: string; state: string; order: string; items: Array<{ id: string; availableAt: string; createdAt: string; attempts: number; correlationId?: string; headers: Record<string, string>; payload: unknown }> };
const list = async (query = '') => {
  const res = await app.api(`queues/worker/messages${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Listing;
};
const publish = async (body: unknown) => {
  const res = await app.api('queues/worker/messages', postJson(body));
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
};

describe('waiting jobs over HTTP (local host)', () => {
  it('an ordering key is taken on publish (a 400 names a bad one) and shown on the waiting list and the job view', async () => {
    const keyed = await publish({ payload: { step: 1 }, orderingKey: 'order-42' });
    const refused = await app.api('queues/worker/messages', postJson([{ payload: 1 }, { payload: 2, orderingKey: '' }]));
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual(['[1].orderingKey']);
    const item = (await list('?top=100')).items.find((i) => i.id === keyed) as { orderingKey?: string } | undefined;
    expect(item?.orderingKey).toBe('order-42');
    const job = await app.api(`jobs/${keyed}`);
    expect(job.status).toBe(200);
    expect(await job.json()).toMatchObject({ id: keyed, state: 'ready', orderingKey: 'order-42' });
    const cancelled = await app.api(`queues/worker/messages/${keyed}`, { method: 'DELETE' });
    expect(cancelled.status).toBeLessThan(300); // leave the queue as the next tests expect it
  });

  it('lists ready jobs oldest first by default, delayed ones apart, newest first on request, bounded by top', async () => {
    const a = await publish({ payload: { n: 1, text: 'a "quoted" é' }, correlationId: 'wj-a', headers: { 'x-tenant': 't1' } });
    await sleep(5);
    const b = await publish({ payload: [1, 2] });
    await sleep(5);
    const c = await publish({ payload: 'plain' });
    const later = await publish({ payload: { n: 4 }, delaySeconds: 3600 });

    const byDefault = await list();
    expect([byDefault.queue, byDefault.state, byDefault.order]).toEqual(['worker', 'ready', 'oldest']);
    expect(byDefault.items.map((i) => i.id)).toEqual([a, b, c]);
    const [first] = byDefault.items;
    expect(first).toMatchObject({ id: a, attempts: 0, correlationId: 'wj-a', payload: { n: 1, text: 'a "quoted" é' } });
    expect(first!.headers).toMatchObject({ 'x-tenant': 't1', 'AR-Correlation-Id': 'wj-a' });
    expect(Date.parse(first!.availableAt)).toBeGreaterThanOrEqual(Date.parse(first!.createdAt));
    expect('correlationId' in byDefault.items[1]!).toBe(false);
    expect(byDefault.items.map((i) => i.payload)).toEqual([{ n: 1, text: 'a "quoted" é' }, [1, 2], 'plain']);

    expect((await list('?order=newest&top=2')).items.map((i) => i.id)).toEqual([c, b]);
    const delayed = await list('?state=delayed');
    expect([delayed.state, delayed.order]).toEqual(['delayed', 'oldest']);
    expect(delayed.items.map((i) => i.id)).toEqual([later]);
    expect(Date.parse(delayed.items[0]!.availableAt) - Date.now()).toBeGreaterThan(3500_000);
  });

  it('refuses bad query values with a problem naming each field, and an unknown queue with a 404', async () => {
    const res = await app.api('queues/worker/messages?state=leased&order=sideways&top=101');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const body = (await res.json()) as { detail: string; errors: Array<{ field: string; message: string }> };
    expect(body.errors.map((e) => e.field)).toEqual(['state', 'order', 'top']);
    expect(body.detail).toBe('state must be one of ready, delayed; order must be one of oldest, newest; top must be an integer from 1 to 100');
    for (const query of ['top=0', 'top=1.5', 'state=Ready', 'state=', 'order=oldest&order=newest']) {
      expect((await app.api(`queues/worker/messages?${query}`)).status, query).toBe(400);
    }
    const unknown = await app.api('queues/nope/messages');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { detail: string }).detail).toMatch(/^queue 'nope' is not configured/);
  });
});
