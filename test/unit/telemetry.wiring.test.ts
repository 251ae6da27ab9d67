// The custom metrics through the real wiring: the function handlers on an in-memory PGlite runtime whose metrics
// are a MemoryMetrics, asserting exact names, dimensions and values.

import { HttpRequest, InvocationContext, type Timer } from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime';
import { METRIC } from '../../shared/telemetry/metric-names';
import { MemoryMetrics, type MetricRecord } from '../../shared/telemetry/metrics';
import { sleep } from '../support/messages';
import { setEnv } from '../support/env';

const ENV: Record<string, string> = {
  PGLITE_DATA_DIR: 'memory://',
  QUEUES: 'worker',
  LOG_LEVEL: 'silent',
  DRAIN_BUDGET_SECONDS: '2',
  DRAIN_IDLE_GRACE_SECONDS: '0.05',
  EMPTY_POLL_DELAY_MS: '10',
  MESSAGE_RETENTION_SECONDS: '1',
  PRUNE_INTERVAL_SECONDS: '0',
};
let restoreEnv: (() => void) | undefined;

const mem = new MemoryMetrics();
let rt: Runtime;
let fns: {
  publishMessage: typeof import('../../functions/publish-message').publishMessage;
  postResponse: typeof import('../../functions/post-response').postResponse;
  drainWorker: typeof import('../../functions/drain-worker').drainWorker;
  drainResponses: typeof import('../../functions/drain-responses').drainResponses;
  drainCallbacks: typeof import('../../functions/drain-callbacks').drainCallbacks;
  queueMetrics: typeof import('../../functions/queue-metrics').queueMetrics;
  sweepChannelTimer: typeof import('../../functions/sweep-channel').sweepChannelTimer;
  pruneDeadLetters: typeof import('../../functions/prune-deadletters').pruneDeadLetters;
};
let shutdownRuntime: () => Promise<void>;

const timer = { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } } as Timer;
const context = (functionName: string) => new InvocationContext({ invocationId: 'test', functionName, logHandler: () => {} });
const post = (url: string, body: unknown, params: Record<string, string> = {}) =>
  new HttpRequest({ method: 'POST', url: `http://localhost/api/${url}`, body: { string: JSON.stringify(body) }, headers: { 'content-type': 'application/json' }, params });

/** The records since the last take(), sorted so concurrent handlers cannot reorder them. */
function take(): MetricRecord[] {
  const out = [...mem.records].sort((a, b) => (a.name + JSON.stringify(a.properties)).localeCompare(b.name + JSON.stringify(b.properties)));
  mem.clear();
  return out;
}
const rec = (name: MetricRecord['name'], value: unknown, properties: Record<string, string> = {}) => ({ name, value, properties });

beforeAll(async () => {
  restoreEnv = setEnv({ ...ENV, APPLICATIONINSIGHTS_CONNECTION_STRING: undefined });
  const runtime = await import('../../shared/runtime');
  shutdownRuntime = runtime.shutdownRuntime;
  rt = await runtime.getRuntime({ metrics: mem });
  fns = {
    ...(await import('../../functions/publish-message')),
    ...(await import('../../functions/post-response')),
    ...(await import('../../functions/drain-worker')),
    ...(await import('../../functions/drain-responses')),
    ...(await import('../../functions/drain-callbacks')),
    ...(await import('../../functions/queue-metrics')),
    ...(await import('../../functions/sweep-channel')),
    ...(await import('../../functions/prune-deadletters')),
  };
});

afterAll(async () => {
  await shutdownRuntime?.();
  restoreEnv?.();
});

describe('telemetry wiring (MemoryMetrics on the real handlers, PGlite)', () => {
  it('runs with telemetry off: plain stores, the injected metrics', () => {
    expect(rt.telemetry.enabled).toBe(false);
    expect(rt.metrics).toBe(mem);
    expect(rt.store.constructor.name).toBe('PostgresTransportStore'); // not wrapped for dependencies
  });

  it('publish-message counts inserted jobs per queue, not duplicates', async () => {
    const worker = [
      { id: '00000000-0000-4000-8000-000000000001', payload: { n: 1 }, correlationId: 'c-worker' },
      { id: '00000000-0000-4000-8000-000000000002', payload: { n: 2 } },
    ];
    expect((await fns.publishMessage(post('queues/worker/messages', worker, { queue: 'worker' }), context('publish-message'))).status).toBe(201);
    expect(take()).toEqual([rec(METRIC.jobsPublished, 2, { queue: 'worker' })]);

    expect((await fns.publishMessage(post('queues/worker/messages', worker, { queue: 'worker' }), context('publish-message'))).status).toBe(200);
    expect(take()).toEqual([]);

    const raw = [{ payload: { CorrelationId: 'c-ingress', answer: 42 } }, { payload: { no: 'correlation id' } }];
    expect((await fns.publishMessage(post('queues/response/messages', raw, { queue: 'response' }), context('publish-message'))).status).toBe(201);
    expect(take()).toEqual([rec(METRIC.jobsPublished, 2, { queue: 'response' })]);
  });

  it('queue-metrics sends the five gauges of every queue, the flows queue included', async () => {
    const stats = await fns.queueMetrics(timer, context('queue-metrics'));
    expect(stats.map((s) => s.queue)).toEqual(['worker', 'response', 'callbacks', 'flows']);
    const records = take();
    expect(records).toHaveLength(20);
    const of = (queue: string) => Object.fromEntries(records.filter((r) => r.properties.queue === queue).map((r) => [r.name, r.value]));
    expect(of('worker')).toEqual({
      [METRIC.queueReady]: 2,
      [METRIC.queueDelayed]: 0,
      [METRIC.queueLeased]: 0,
      [METRIC.queueDeadLettered]: 0,
      [METRIC.queueOldestReadyAge]: expect.any(Number),
    });
    expect(of('response')[METRIC.queueReady]).toBe(2);
    expect(of('callbacks')).toEqual({
      [METRIC.queueReady]: 0,
      [METRIC.queueDelayed]: 0,
      [METRIC.queueLeased]: 0,
      [METRIC.queueDeadLettered]: 0,
      [METRIC.queueOldestReadyAge]: 0, // nothing ready: 0, not a missing value
    });
    for (const r of records) expect(Object.keys(r.properties)).toEqual(['queue']);
  });

  it('drain-worker: claimed, completed, the drain duration, and the worker response it published', async () => {
    const [report] = await fns.drainWorker(timer, context('drain-worker'));
    expect(report).toMatchObject({ claimed: 2, completed: 2, stoppedBy: 'idle' });
    expect(take()).toEqual([
      rec(METRIC.drainDuration, report!.durationMs, { queue: 'worker', outcome: 'idle' }),
      rec(METRIC.jobsClaimed, 2, { queue: 'worker' }),
      rec(METRIC.jobsCompleted, 2, { queue: 'worker' }),
      rec(METRIC.responsesPublished, 1, { delivery: 'stored', source: 'worker' }),
    ]);
  });

  it('drain-responses: an ingress response published, and a response without a correlation id failed into the dead letters', async () => {
    const [report] = await fns.drainResponses(timer, context('drain-responses'));
    expect(report).toMatchObject({ claimed: 2, completed: 1, deadLettered: 1, retried: 0 });
    expect(take()).toEqual([
      rec(METRIC.drainDuration, report!.durationMs, { queue: 'response', outcome: 'idle' }),
      rec(METRIC.jobsClaimed, 2, { queue: 'response' }),
      rec(METRIC.jobsCompleted, 1, { queue: 'response' }),
      rec(METRIC.jobsDeadLettered, 1, { queue: 'response' }),
      rec(METRIC.jobsFailed, 1, { queue: 'response', outcome: 'deadlettered' }),
      rec(METRIC.responsesPublished, 1, { delivery: 'stored', source: 'ingress' }),
    ]);
  });

  it('drain-callbacks on an empty queue: only the duration', async () => {
    const [report] = await fns.drainCallbacks(timer, context('drain-callbacks'));
    expect(take()).toEqual([rec(METRIC.drainDuration, report!.durationMs, { queue: 'callbacks', outcome: 'idle' })]);
  });

  it('post-response counts a stored response once, not its repeat', async () => {
    const body = { id: '00000000-0000-4000-8000-0000000000aa', correlationId: 'c-http', payload: { ok: true } };
    const first = await fns.postResponse(post('responses', body), context('post-response'));
    expect(first).toMatchObject({ status: 202 });
    expect(take()).toEqual([rec(METRIC.responsesPublished, 1, { delivery: 'stored', source: 'http' })]);
    await fns.postResponse(post('responses', body), context('post-response'));
    expect(take()).toEqual([]);
  });

  it('sweep-channel: its duration and the channel rows it pruned, by table', async () => {
    await sleep(1100); // MESSAGE_RETENTION_SECONDS=1: the three stored responses have expired
    const report = await fns.sweepChannelTimer(timer, context('sweep-channel'));
    expect(report.pruned).toEqual({ messages: 3, subscribers: 0, recovery: 0 });
    expect(take()).toEqual([rec(METRIC.sweepDuration, report.durationMs), rec(METRIC.pruneDeleted, 3, { table: 'messages' })]);
  });

  it('prune-deadletters: nothing old enough, so no counter row', async () => {
    const result = await fns.pruneDeadLetters(timer, context('prune-deadletters'));
    expect(result).toMatchObject({ deleted: 0 });
    expect(take()).toEqual([]);
  });

  it('queue-metrics reflects the drains: nothing ready, one dead letter from the response queue', async () => {
    await fns.queueMetrics(timer, context('queue-metrics'));
    const records = take();
    const value = (name: MetricRecord['name'], queue: string) => records.find((r) => r.name === name && r.properties.queue === queue)?.value;
    expect(value(METRIC.queueReady, 'worker')).toBe(0);
    expect(value(METRIC.queueOldestReadyAge, 'worker')).toBe(0);
    expect(value(METRIC.queueDeadLettered, 'response')).toBe(1);
    expect(value(METRIC.queueDeadLettered, 'worker')).toBe(0);
  });
});
