// Durable flows through the local host over HTTP (in-process app on PGlite), on the default timer schedules (no
// sped-up drains): the shipped example-approval completes with a forward approver and with an approval posted
// later by hand; 20 children fan out and join; the HTTP surface answers as documented (OpenAPI-checked).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appFlows } from '../../flows';
import { getRuntime } from '../../shared/runtime';
import { startJobReceiver, type JobReceiver } from '../support/job-receiver';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp } from './app-harness';

interface Run {
  id: string;
  status: string;
  result?: unknown;
  error?: { name: string; message: string };
  attempts: number;
  steps: Array<{ name: string; state: string; correlationId?: string; completedAt?: string; wakeAt?: string; childId?: string }>;
}

let app: RunningApp;
let approver: JobReceiver;
const approvalJobs: Array<{ payload: { flowId: string; item: string }; correlationId?: string }> = [];

// a flow of this test only, registered beside the shipped ones before the app starts
appFlows.register('e2e-fan-out', async (ctx, input: { n: number }) => {
  const squares = await Promise.all(Array.from({ length: input.n }, (_, i) => ctx.child<number>(`square-${i}`, 'e2e-square', i)));
  return { sum: squares.reduce((a, b) => a + b, 0) };
});
appFlows.register('e2e-square', async (ctx, i: number) => ctx.step('square', () => i * i));

beforeAll(async () => {
  approver = await startJobReceiver((job: { payload: { flowId: string; item: string }; correlationId?: string }) => approvalJobs.push(job), {
    status: 200,
    body: '{"approved":true,"by":"forward-approver"}',
  });
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    QUEUES: 'approvals,manual',
    QUEUE__approvals__FORWARD_URL: `http://127.0.0.1:${approver.port}/approve`,
    // nobody answers `manual` jobs by themselves: an approver answers later with POST /api/responses
    QUEUE__manual__FORWARD_URL: 'http://127.0.0.1:9/nobody',
    QUEUE__manual__MAX_DELIVERY_ATTEMPTS: '100',
    QUEUE__manual__REDELIVERY_DELAY_SECONDS: '30',
    LOG_LEVEL: 'warn',
  });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await approver?.close();
});

const readRun = async (id: string, query = ''): Promise<Run> => {
  const res = await app.api(`flows/example-approval/${encodeURIComponent(id)}${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Run;
};

describe('durable flows over HTTP (default timer schedules)', () => {
  it('example-approval completes with a forward approver: 202 start, then the long-poll answers the result', async () => {
    const start = await app.api('flows/example-approval', postJson({ id: 'book-1', input: { item: 'book' } }));
    expect(start.status).toBe(202);
    expect(await start.json()).toEqual({ id: 'book-1', status: 'Running' });
    const run = await readRun('book-1', '?waitSeconds=60');
    expect(run.status).toBe('Succeeded');
    expect(run.result).toEqual({ item: 'book', approval: { approved: true, by: 'forward-approver' } });
    expect(run.steps.map((s) => [s.name, s.state])).toEqual([
      ['reserve', 'completed'],
      ['approve', 'completed'],
      ['cool-off', 'completed'],
    ]);
    expect(approvalJobs.filter((j) => j.payload.flowId === 'book-1')).toEqual([{ ...approvalJobs.find((j) => j.payload.flowId === 'book-1'), payload: { flowId: 'book-1', item: 'book' } }]);
    // the same start again: the existing run; other input: a conflict; an unknown flow: 404
    const again = await app.api('flows/example-approval', postJson({ id: 'book-1', input: { item: 'book' } }));
    expect([again.status, await again.json()]).toEqual([200, { id: 'book-1', status: 'Succeeded', existing: true }]);
    expect((await app.api('flows/example-approval', postJson({ id: 'book-1', input: { item: 'lamp' } }))).status).toBe(409);
    expect((await app.api('flows/no-such-flow', postJson({ input: {} }))).status).toBe(404);
    expect((await app.api('flows/example-approval', postJson({ input: {}, extra: 1 }))).status).toBe(400);
    expect((await app.api('flows/example-approval', postJson({ id: ' padded', input: {} }))).status).toBe(400);
  }, 90_000);

  it('an approval posted later with POST /api/responses (the run parked, no worker held) completes the step', async () => {
    const start = await app.api('flows/example-approval', postJson({ id: 'lamp-1', input: { item: 'lamp', approvalQueue: 'manual' } }));
    expect(start.status).toBe(202);
    const waiting = await eventually(async () => {
      const r = await readRun('lamp-1');
      return r.steps.find((s) => s.name === 'approve' && s.state === 'waiting-for-response') ? r : undefined;
    }, 'the approve step to wait', 30_000, 200);
    const correlationId = waiting.steps.find((s) => s.name === 'approve')!.correlationId!;
    const reserveDone = waiting.steps.find((s) => s.name === 'reserve')!.completedAt;
    const rt = await getRuntime();
    // nobody answers within the in-process window (3 s): the run parks and releases its lease
    await eventually(async () => ((await rt.stores.flows.observeLease('lamp-1')) === 'unheld' ? true : undefined), 'the run to park', 10_000, 100);
    const t0 = Date.now();
    const post = await app.api('responses', postJson({ correlationId, payload: { approved: true, by: 'a human' } }));
    expect(post.status).toBe(202);
    expect(await post.json()).toMatchObject({ delivery: 'recovery' });
    const done = await readRun('lamp-1', '?waitSeconds=60');
    expect(done.status).toBe('Succeeded');
    expect(done.result).toEqual({ item: 'lamp', approval: { approved: true, by: 'a human' } });
    expect(done.steps.find((s) => s.name === 'reserve')!.completedAt).toBe(reserveDone);
    console.info(`[e2e:flows] approval posted → run succeeded in ${Date.now() - t0} ms (default drain schedules)`);
  }, 90_000);

  it('a quick answer, posted while the run waits in process, completes the step without parking: p50 <= 250 ms from POST to step done', async () => {
    const took: number[] = [];
    for (let i = 0; i < 9; i++) {
      const id = `quick-${i}`;
      expect((await app.api('flows/example-approval', postJson({ id, input: { item: `quick ${i}`, approvalQueue: 'manual' } }))).status).toBe(202);
      const waiting = await eventually(async () => {
        const r = await readRun(id);
        return r.steps.find((s) => s.name === 'approve' && s.state === 'waiting-for-response') ? r : undefined;
      }, `${id} to wait`, 30_000, 20);
      const correlationId = waiting.steps.find((s) => s.name === 'approve')!.correlationId!;
      const t0 = performance.now();
      const post = await app.api('responses', postJson({ correlationId, payload: { approved: i } }));
      const t1 = performance.now();
      expect(post.status).toBe(202);
      // taken by the waiting run: its checkpoint committed before the 202, so the step reads done right after it
      expect(await post.json()).toMatchObject({ delivery: 'live' });
      expect((await readRun(id)).steps.find((s) => s.name === 'approve')!.state).toBe('completed');
      took.push(t1 - t0);
      const done = await readRun(id, '?waitSeconds=30');
      expect(done).toMatchObject({ status: 'Succeeded', result: { item: `quick ${i}`, approval: { approved: i } }, attempts: 1 });
    }
    took.sort((a, b) => a - b);
    const p50 = took[Math.floor(took.length / 2)]!;
    console.info(`[e2e:flows] quick answer: POST /api/responses → step done p50 ${p50.toFixed(0)} ms, max ${took[took.length - 1]!.toFixed(0)} ms over ${took.length} runs`);
    expect(p50).toBeLessThanOrEqual(250);
  }, 120_000);

  it('restart over HTTP: a cancelled run restarts from its awaited step, asks again with a new correlation id, and completes', async () => {
    await app.api('flows/example-approval', postJson({ id: 'bell-1', input: { item: 'bell', approvalQueue: 'manual' } }));
    const first = await eventually(async () => {
      const r = await readRun('bell-1');
      return r.steps.find((s) => s.name === 'approve' && s.state === 'waiting-for-response') ? r : undefined;
    }, 'bell-1 to wait', 30_000, 100);
    const firstCid = first.steps.find((s) => s.name === 'approve')!.correlationId!;
    const reserveDone = first.steps.find((s) => s.name === 'reserve')!.completedAt;
    expect((await app.api('flows/example-approval/bell-1/restart', postJson({ fromStep: 'approve' }))).status).toBe(409); // Running: not restartable
    expect(((await (await app.api('flows/example-approval/bell-1/cancel', { method: 'POST' })).json()) as Run).status).toBe('Failed');
    const unknown = await app.api('flows/example-approval/bell-1/restart', postJson({ fromStep: 'no-such-step' }));
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { errors: Array<{ field: string }> }).errors[0]!.field).toBe('fromStep');
    expect((await app.api('flows/example-approval/bell-1/restart', postJson({}))).status).toBe(400);
    const restarted = await app.api('flows/example-approval/bell-1/restart', postJson({ fromStep: 'approve' }));
    expect(restarted.status).toBe(200);
    const r = (await restarted.json()) as Run;
    expect(r.status).toBe('Running');
    expect(r.steps.map((s) => s.name)).toEqual(['reserve']);
    const again = await eventually(async () => {
      const x = await readRun('bell-1');
      const step = x.steps.find((s) => s.name === 'approve' && s.state === 'waiting-for-response');
      return step && step.correlationId !== firstCid ? x : undefined;
    }, 'bell-1 to ask again', 30_000, 50);
    const cid = again.steps.find((s) => s.name === 'approve')!.correlationId!;
    expect((await app.api('responses', postJson({ correlationId: cid, payload: { approved: 'second time' } }))).status).toBe(202);
    const done = await readRun('bell-1', '?waitSeconds=30');
    expect(done).toMatchObject({ status: 'Succeeded', result: { item: 'bell', approval: { approved: 'second time' } } });
    expect(done.steps.find((s) => s.name === 'reserve')!.completedAt).toBe(reserveDone);
    expect((await app.api('flows/example-approval/bell-1/restart', postJson({ fromStep: 'approve' }))).status).toBe(409); // Succeeded
  }, 90_000);

  it('20 children fan out with Promise.all and join', async () => {
    const start = await app.api('flows/e2e-fan-out', postJson({ id: 'fan-20', input: { n: 20 } }));
    expect(start.status).toBe(202);
    const res = await app.api('flows/e2e-fan-out/fan-20?waitSeconds=90');
    const run = (await res.json()) as Run;
    expect(run.status).toBe('Succeeded');
    expect(run.result).toEqual({ sum: Array.from({ length: 20 }, (_, i) => i * i).reduce((a, b) => a + b, 0) });
    expect(run.steps).toHaveLength(20);
    expect(run.steps.every((s) => s.state === 'completed' && s.childId === `fan-20:${s.name}`)).toBe(true);
    const child = (await (await app.api('flows/e2e-square/fan-20%3Asquare-7')).json()) as Run & { parentId: string };
    expect(child).toMatchObject({ status: 'Succeeded', result: 49, parentId: 'fan-20' });
  }, 120_000);

  it('suspend, resume and cancel a parked run; list runs by status', async () => {
    await app.api('flows/example-approval', postJson({ id: 'hat-1', input: { item: 'hat', approvalQueue: 'manual' } }));
    await eventually(async () => ((await readRun('hat-1')).steps.some((s) => s.state === 'waiting-for-response') ? true : undefined), 'hat-1 to wait', 30_000, 200);
    const suspended = await app.api('flows/example-approval/hat-1/suspend', { method: 'POST' });
    expect(suspended.status).toBe(200);
    expect(((await suspended.json()) as Run).status).toBe('Suspended');
    expect((await app.api('flows/example-approval/hat-1/suspend', { method: 'POST' })).status).toBe(200);
    const list = await app.api('flows?status=Suspended');
    const page = (await list.json()) as { items: Array<{ id: string }>; counts: Record<string, number>; flows: string[] };
    expect(page.items.map((i) => i.id)).toEqual(['hat-1']);
    expect(page.counts.Suspended).toBe(1);
    expect(page.flows).toContain('example-approval');
    expect(((await (await app.api('flows/example-approval/hat-1/resume', { method: 'POST' })).json()) as Run).status).toBe('Running');
    const cancelled = (await (await app.api('flows/example-approval/hat-1/cancel', { method: 'POST' })).json()) as Run;
    expect(cancelled).toMatchObject({ status: 'Failed', error: { name: 'FlowCancelledError' } });
    expect((await app.api('flows/example-approval/hat-1/cancel', { method: 'POST' })).status).toBe(409);
    expect((await app.api('flows/example-approval/hat-1/pause', { method: 'POST' })).status).toBe(404);
    expect((await app.api('flows/example-approval/nope')).status).toBe(404);
    expect((await app.api('flows?status=Sleeping')).status).toBe(400);
    // a page's cursor leads to the next page; a tampered one is a 400 naming the field, not a store error
    const first = (await (await app.api('flows?limit=1')).json()) as { items: Array<{ id: string }>; cursor?: string };
    expect(first.cursor).toBeDefined();
    const next = await app.api(`flows?limit=1&cursor=${first.cursor}`);
    expect(next.status).toBe(200);
    expect(((await next.json()) as { items: Array<{ id: string }> }).items.map((i) => i.id)).not.toEqual(first.items.map((i) => i.id));
    for (const cursor of ['nope', '%00', Buffer.from('["x","y"]').toString('base64url')]) {
      const bad = await app.api(`flows?cursor=${cursor}`);
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { errors: Array<{ field: string }> }).errors[0]!.field).toBe('cursor');
    }
    // the flows queue is an internal queue operators can inspect (its dead letters are the "run is stuck" alarm)
    const q = await app.api('queues/flows');
    expect(q.status).toBe(200);
    expect(await q.json()).toMatchObject({ queue: 'flows', route: { handler: 'flows' } });
    expect((await app.api('queues/flows/deadletters')).status).toBe(200);
    expect((await app.api('queues/flows/messages', postJson({ payload: {} }))).status).toBe(404); // not published to over HTTP
  }, 90_000);
});
