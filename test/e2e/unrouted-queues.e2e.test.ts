// A job on a queue no route serves (issue 27, item 5): the README's outbox block inserts into `orders`, which the
// default QUEUES=worker does not name; GET /api/queues/orders answered 404 and neither the list nor the dashboard
// showed the job. Now the list shows such a queue read-only (`routed: false`) and GET /api/queues/{queue} answers
// its counts with `route: { handler: 'none' }`, while a queue with no rows and no route stays a 404.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRuntime } from '../../shared/runtime';
import { startApp, type RunningApp } from './app-harness';

let app: RunningApp;

beforeAll(async () => {
  app = await startApp({ PGLITE_DATA_DIR: 'memory://', QUEUES: 'worker', DRAIN_WORKER_SCHEDULE: '0 0 0 1 1 *', LOG_LEVEL: 'warn' });
});
afterAll(async () => {
  await app?.close();
});

describe('queues that hold rows but have no route', () => {
  it('are listed read-only and answer their counts; an empty unknown queue is still a 404', async () => {
    const rt = await getRuntime();
    // as the SQL outbox function would: a row on a queue QUEUES does not name
    await rt.store.publish([{ id: randomUUID(), queue: 'orders', payloadJson: '{"orderId":42}', headers: {}, delayMs: 0 }]);
    const list = (await (await app.api('queues')).json()) as { items: Array<{ queue: string; ready: number; routed?: boolean }> };
    expect(list.items.map((i) => i.queue)).toEqual(['worker', 'response', 'callbacks', 'flows', 'orders']);
    expect(list.items.find((i) => i.queue === 'orders')).toMatchObject({ ready: 1, routed: false });
    expect(list.items.find((i) => i.queue === 'worker')!.routed).toBeUndefined();

    const one = await app.api('queues/orders');
    expect(one.status).toBe(200);
    expect(await one.json()).toMatchObject({ queue: 'orders', ready: 1, route: { handler: 'none' }, policy: null });
    expect((await app.api('queues/nothing-here')).status).toBe(404);
    expect((await app.api('queues/deadletter')).status).toBe(404); // dead letters are listed under their source queues
  });
});
