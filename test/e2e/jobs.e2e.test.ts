// Job lookup and history over HTTP through the local host (issue 16 §2): with JOB_HISTORY_RETENTION_DAYS set, a
// drained job is found by id as completed and listed by GET /api/jobs (by queue or correlation id, a page at a
// time); a waiting job reads as delayed; a queue whose own setting turns history off answers 404 once done; bad
// searches and ids are 400 problems. Every answer is checked against the OpenAPI document (checkedFetch).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

let app: RunningApp;

beforeAll(async () => {
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    QUEUES: 'worker,plain,brief',
    JOB_HISTORY_RETENTION_DAYS: '1',
    QUEUE__plain__JOB_HISTORY_RETENTION_DAYS: '0',
    // about 2.6 s of history, pruned by the prune-deadletters timer every second
    QUEUE__brief__JOB_HISTORY_RETENTION_DAYS: '0.00003',
    PRUNE_DEADLETTERS_SCHEDULE: '*/1 * * * * *',
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
});

interface JobAnswer {
  id: string;
  state: string;
  queue: string;
  attempts: number | null;
  correlationId: string | null;
  createdAt: string;
  availableAt: string | null;
  completedAt: string | null;
  lastError: string | null;
}
const publish = async (queue: string, body: Record<string, unknown>) => ((await (await app.api(`queues/${queue}/messages`, postJson(body))).json()) as { id: string }).id;
const job = async (id: string) => {
  const res = await app.api(`jobs/${id}`);
  return res.status === 200 ? ((await res.json()) as JobAnswer) : res.status;
};
const search = async (query: string) => {
  const res = await app.api(`jobs?${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as { items: JobAnswer[]; nextCursor?: string };
};

describe('job lookup and history over HTTP (local host)', () => {
  it('a drained job of a queue with history is found completed by id, with its attempts, times and correlation id', async () => {
    const id = await publish('worker', { payload: { n: 1 }, correlationId: 'e2e-order-1' });
    const done = await eventually(async () => {
      const j = await job(id);
      return typeof j === 'object' && j.state === 'completed' ? j : undefined;
    }, 'the job completed');
    expect(done).toMatchObject({ id, queue: 'worker', attempts: 1, correlationId: 'e2e-order-1', lastError: null });
    expect(Date.parse(done.completedAt!)).toBeGreaterThanOrEqual(Date.parse(done.createdAt));
  });

  it('a delayed job reads as delayed; a queue whose own setting is 0 keeps no history (404 once done)', async () => {
    const later = await publish('worker', { payload: { n: 2 }, delaySeconds: 600 });
    expect(await job(later)).toMatchObject({ state: 'delayed', attempts: 0, completedAt: null });
    const plain = await publish('plain', { payload: { n: 3 } });
    await eventually(async () => (await job(plain)) === 404, 'the plain job completed and left no row');
    const res = await app.api(`jobs/${plain}`);
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
  });

  it('the prune timer removes a completed job once its queue\'s retention has passed, and leaves the other queues\' history', async () => {
    const kept = await publish('worker', { payload: { keep: true } });
    const brief = await publish('brief', { payload: { brief: true } });
    await eventually(async () => {
      const j = await job(brief);
      return typeof j === 'object' && j.state === 'completed';
    }, 'the brief job completed');
    await eventually(async () => (await job(brief)) === 404, 'the brief job pruned', 20_000);
    expect(await job(kept)).toMatchObject({ state: 'completed' });
  });

  it('GET /api/jobs: by correlation id and by queue, newest first, a page at a time', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await publish('worker', { payload: { i }, correlationId: 'e2e-batch' }));
    await eventually(async () => (await search('correlationId=e2e-batch')).items.length === 3, 'three completed jobs of the batch');
    const first = await search('correlationId=e2e-batch&top=2');
    expect(first.items).toHaveLength(2);
    const second = await search(`correlationId=e2e-batch&top=2&cursor=${first.nextCursor}`);
    expect([...first.items, ...second.items].map((j) => j.id).sort()).toEqual([...ids].sort());
    expect(second.nextCursor).toBeUndefined();
    const byQueue = await search('queue=worker&state=completed&since=2026-01-01T00:00:00Z');
    expect(byQueue.items.length).toBeGreaterThanOrEqual(4);
    expect(byQueue.items.every((j) => j.queue === 'worker' && j.state === 'completed')).toBe(true);
    const times = byQueue.items.map((j) => Date.parse(j.completedAt!));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('bad ids and searches are 400 problems naming the field', async () => {
    expect((await app.api('jobs/not-a-uuid')).status).toBe(400);
    for (const [query, field] of [
      ['', 'queue'],
      ['queue=nosuch', 'queue'],
      ['queue=worker&state=ready', 'state'],
      ['queue=worker&top=0', 'top'],
      ['queue=worker&since=tomorrow', 'since'],
      ['queue=worker&cursor=nope', 'cursor'],
    ] as const) {
      const res = await app.api(`jobs?${query}`);
      expect(res.status, query).toBe(400);
      const body = (await res.json()) as { errors: Array<{ field: string }> };
      expect(body.errors.map((e) => e.field), query).toContain(field);
    }
  });
});
