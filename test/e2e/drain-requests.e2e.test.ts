// Drain requests end to end on Azurite through the local host (DRAIN_TRIGGER=queue), with the timers effectively
// off (their schedule is once a year): a publish wakes a drain through the storage queue, a delayed job's request
// surfaces when it is due, a backlog larger than one drain's budget fans out, a lost request is caught by the
// safety-net timer (fired here as the host fires it), and every job runs exactly once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { QueueServiceClient, type QueueClient } from '@azure/storage-queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAzurite, type Azurite } from '../../local/azurite';
import { loadFunctionApp, type FunctionTable } from '../../local/functions-core';
import { startLocalHost, type LocalHost } from '../../local/host';
import { invokeFunction, type InvocationRecord } from '../../local/invoke';
import { readQueueSettings } from '../../local/settings';
import { eventually, sleep } from '../support/messages';
import { ANNOUNCE_RECHECKS, encodeRequest } from '../../shared/drain-requests/message';
import { checkedFetch, postJson } from './app-harness';

const root = path.resolve(__dirname, '../..');
const YEARLY = '0 0 0 1 1 *';
let azurite: Azurite;
let host: LocalHost;
let table: FunctionTable;
let requests: QueueClient;
let sink: Server;
const runs = new Map<number, number[]>(); // payload n → the times it ran
const invocations: InvocationRecord[] = [];
const logs: string[] = [];

beforeAll(async () => {
  azurite = await startAzurite({ location: 'memory' });
  sink = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const n = (JSON.parse(body) as { payload: { n: number } }).payload.n;
      runs.set(n, [...(runs.get(n) ?? []), Date.now()]);
      setTimeout(() => res.end('{}'), 50); // a handler that waits 50 ms
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  Object.assign(process.env, {
    ...(process.env.PG_URL ? { DATABASE_URL: process.env.PG_URL, SQL_SCHEMA: `drainreq_${process.pid}` } : { PGLITE_DATA_DIR: 'memory://' }),
    AzureWebJobsStorage: azurite.connectionString,
    DRAIN_TRIGGER: 'queue',
    DRAIN_REQUEST_QUEUE: 'drain-e2e',
    WORKER_FORWARD_URL: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`,
    HANDLER_CONCURRENCY: '4',
    DRAIN_BUDGET_SECONDS: '1',
    DRAIN_FANOUT: '2',
    DRAIN_WORKER_SCHEDULE: YEARLY,
    DRAIN_RESPONSES_SCHEDULE: YEARLY,
    DRAIN_CALLBACKS_SCHEDULE: YEARLY,
    SWEEP_CHANNEL_SCHEDULE: YEARLY,
    PRUNE_DEADLETTERS_SCHEDULE: YEARLY,
    QUEUE_METRICS_SCHEDULE: YEARLY,
    LOG_LEVEL: 'warn',
  });
  table = await loadFunctionApp(() => import('../../functions/index'));
  host = await startLocalHost({
    table,
    port: 0,
    logger: (l) => logs.push(l),
    queueSettings: readQueueSettings(root),
    onInvocation: (r) => invocations.push(r),
  });
  requests = QueueServiceClient.fromConnectionString(azurite.connectionString).getQueueClient('drain-e2e');
  // a warm app (its runtime and schema ready), as an idle instance is
  expect((await checkedFetch(`${host.url}/api/health`)).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await host?.close();
  await azurite?.stop();
  await new Promise((r) => sink?.close(r));
});

let next = 0;
const publish = async (count: number, delaySeconds?: number): Promise<number[]> => {
  const ns = Array.from({ length: count }, () => ++next);
  const body = ns.map((n) => ({ payload: { n }, ...(delaySeconds ? { delaySeconds } : {}) }));
  const res = await checkedFetch(`${host.url}/api/queues/worker/messages`, postJson(count === 1 ? body[0] : body));
  expect(res.status).toBe(201);
  return ns;
};
const requested = () => invocations.filter((r) => r.name === 'drain-requested');

describe('drain requests on Azurite (DRAIN_TRIGGER=queue, timers off)', () => {
  it('registers the queue trigger on the configured queue', () => {
    expect(table.queues.map((q) => ({ name: q.name, queueName: q.queueName, connection: q.connection }))).toEqual([
      { name: 'drain-requested', queueName: 'drain-e2e', connection: 'AzureWebJobsStorage' },
    ]);
  });

  it('a publish wakes a drain through the storage queue', async () => {
    const before = requested().length;
    const t0 = Date.now();
    const [n] = await publish(1);
    await eventually(() => runs.get(n!), `job ${n} ran`, 5000);
    expect(runs.get(n!)).toHaveLength(1);
    expect(runs.get(n!)![0]! - t0).toBeLessThan(2000);
    await eventually(() => requested().length > before || undefined, 'the drain-requested invocation ended');
  });

  it("a delayed job's request surfaces when it is due", async () => {
    const t0 = Date.now();
    const [n] = await publish(1, 3);
    await sleep(2000);
    expect(runs.get(n!)).toBeUndefined();
    await eventually(() => runs.get(n!), `job ${n} ran`, 5000);
    expect(runs.get(n!)).toHaveLength(1);
    const after = runs.get(n!)![0]! - t0;
    expect(after).toBeGreaterThanOrEqual(3000);
    expect(after).toBeLessThan(5000);
  });

  it('a backlog larger than one drain clears fans out into more requests', async () => {
    const before = requested().length;
    const ns = [...(await publish(100)), ...(await publish(100))]; // ~80 jobs/s per drain: about 3 budgets
    await eventually(() => ns.every((n) => runs.has(n)) || undefined, 'the backlog ran', 30_000);
    expect(logs.some((l) => /ready after the budget: asked for 2 more drain/.test(l))).toBe(true);
    // the two requests it fanned out into reach the trigger (the publish's own request may have been coalesced
    // into a drain still running from the test before; a faster drain may clear the backlog before the fan-out
    // requests run: they still run, and find little or nothing)
    await eventually(() => requested().length - before >= 2 || undefined, 'the fan-out requests to run', 20_000);
    expect(requested().length - before).toBeGreaterThanOrEqual(2);
  });

  it('a lost request is caught by the safety-net timer', async () => {
    // quiet first: the backlog's last requests (fan-out, continuations) have run, and none begets another (a drain
    // that idled into its budget, 1 s here like the idle grace, used to fan out forever)
    let seen = -1;
    await eventually(async () => {
      const count = (await requests.getProperties()).approximateMessagesCount;
      const quiet = seen === requested().length && count === 0;
      seen = requested().length;
      return quiet || undefined;
    }, 'no drain request left', 20_000, 2500);
    const [n] = await publish(1, 2);
    // the publish answers before its drain request is put (the sender does not hold the answer for it): wait for the
    // request (delayed, invisible, but counted) before losing it, or it would arrive after the clear
    await eventually(async () => ((await requests.getProperties()).approximateMessagesCount ?? 0) >= 1 || undefined, 'the delayed request put', 5000, 50);
    await requests.clearMessages(); // the delayed request is lost
    await sleep(3500);
    expect(runs.get(n!)).toBeUndefined(); // nothing else would have run it
    const timer = table.timers.find((t) => t.name === 'drain-worker')!;
    const fired = { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } };
    await invokeFunction(timer, fired, 'safety net', { logger: () => undefined, hooks: table.hooks, appHookData: {} });
    expect(runs.get(n!)).toHaveLength(1);
  });

  it('every job ran exactly once', () => {
    expect(runs.size).toBe(next);
    for (const [n, times] of runs) expect(times, `job ${n}`).toHaveLength(1);
  });

  // after the exactly-once check above: the schedule's jobs share one payload n
  it('a schedule fires through its drain requests alone (timers off): each slot once, the next slot announced', async () => {
    const n = -2;
    const put = await checkedFetch(`${host.url}/api/schedules/every-2s`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queue: 'worker', cron: '*/2 * * * * *', payload: { n } }),
    });
    expect(put.status).toBe(201);
    const from = Date.now();
    await eventually(() => ((runs.get(n)?.length ?? 0) >= 4 ? true : undefined), 'four slots through drain requests', 40_000, 100);
    expect((await checkedFetch(`${host.url}/api/schedules/every-2s`, { method: 'DELETE' })).status).toBe(204);
    const times = runs.get(n)!;
    // no slot twice: runs are about 2 s apart (delivery jitter aside), never back to back, and no more than the slots passed
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!, `run ${i}`).toBeGreaterThan(300);
    expect(times.length).toBeLessThanOrEqual(Math.floor((times.at(-1)! - from) / 2000) + 2);
  }, 60_000);

  // last: its later re-checks (4 s, 8 s) still run after it ends, and find nothing
  it("a request with re-checks (the T-SQL announce's, sent before its publisher's COMMIT) that finds nothing comes back 2 s later", async () => {
    // quiet first: the schedule's last requests have run (its next-slot request surfaces after the delete)
    let seen = -1;
    await eventually(async () => {
      const count = (await requests.getProperties()).approximateMessagesCount;
      const quiet = seen === requested().length && count === 0;
      seen = requested().length;
      return quiet || undefined;
    }, 'no drain request left', 20_000, 2500);
    const before = requested().length;
    const sent = Date.now();
    await requests.sendMessage(encodeRequest({ queues: ['worker'], recheck: ANNOUNCE_RECHECKS }));
    await eventually(() => requested().length >= before + 2 || undefined, 'the request and its first re-check ran', 15_000, 50);
    const [first, second] = requested().slice(before);
    expect(first!.start - sent).toBeLessThan(2000); // the request itself, within the trigger's polling
    // the re-check, sent when the first drain ended (after its 1 s idle grace), visible 2 s after that
    expect(second!.start - first!.end).toBeGreaterThanOrEqual(2000 - 100);
    expect(second!.start - first!.end).toBeLessThan(4000);
  }, 45_000);
});
