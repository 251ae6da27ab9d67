// Recurring schedules through two local hosts (separate Node processes, as two Function instances) on one
// PostgreSQL server, in timer mode (each host's drain-worker timer evaluates every second): a schedule every
// second gives exactly one job per slot over 20+ consecutive slots, however the two hosts interleave, with no
// leader. The HTTP routes answer as the OpenAPI document says (checkedFetch), problems included.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSchema } from '../contract/fixtures';
import { startJobReceiver, type JobReceiver } from '../support/job-receiver';
import { eventually, sleep } from '../support/messages';
import { checkedFetch, TIMER_DRAIN_EVERY_SECOND } from './app-harness';
import { startHostProcess, stopHostProcess, type HostProcess as Host } from './host-process';

const PG_URL = process.env.PG_URL;
if (!PG_URL) console.warn('[e2e:schedules] skipped: PG_URL is not set (two processes need a shared database server)');
const root = path.resolve(__dirname, '../..');
const SLOTS = 22;

const startHost = (schema: string, forwardUrl: string): Promise<Host> =>
  startHostProcess({ DATABASE_URL: PG_URL, SQL_SCHEMA: schema, DRAIN_TRIGGER: 'timer', ...TIMER_DRAIN_EVERY_SECOND, WORKER_FORWARD_URL: forwardUrl, LOG_LEVEL: 'info' });

const put = (url: string, body: unknown) => checkedFetch(url, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe.skipIf(!PG_URL)('schedules across two hosts on one PostgreSQL server', () => {
  const schema = newSchema();
  const jobs: Array<{ id: string; headers: Record<string, string>; payload: unknown }> = [];
  let receiver: JobReceiver;
  let a: Host;
  let b: Host;

  beforeAll(async () => {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
    receiver = await startJobReceiver<{ id: string; headers: Record<string, string>; payload: unknown }>((j) => jobs.push(j), { status: 200, body: '' });
    const forward = `http://127.0.0.1:${receiver.port}/jobs`;
    a = await startHost(schema, forward); // the first creates the schema
    b = await startHost(schema, forward);
  }, 120_000);

  afterAll(async () => {
    for (const h of [a, b]) await stopHostProcess(h);
    await receiver?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  it('refuses a bad cron, an unknown zone and an unknown queue with field problems', async () => {
    const bad = async (body: unknown) => {
      const res = await put(`${a.url}/schedules/bad`, body);
      expect(res.status).toBe(400);
      return ((await res.json()) as { errors: Array<{ field: string }> }).errors.map((e) => e.field);
    };
    expect(await bad({ queue: 'worker', cron: '0 61 * * * *' })).toEqual(['cron']);
    expect(await bad({ queue: 'worker', cron: '0 * * * * *', timeZone: 'Europe/Atlantis' })).toEqual(['timeZone']);
    expect(await bad({ queue: 'nope', cron: '0 * * * * *' })).toEqual(['queue']);
    expect((await checkedFetch(`${b.url}/schedules/bad`)).status).toBe(404);
  });

  it(`a schedule every second: exactly one job per slot over ${SLOTS}+ consecutive slots, from two hosts`, async () => {
    const created = await put(`${a.url}/schedules/every-second`, '{"queue":"worker","cron":"*/1 * * * * *","payload":{"big":9007199254740993},"headers":{"tenant":"t1"}}');
    expect(created.status).toBe(201);
    const view = (await created.json()) as { nextRun: string; lastRun: string | null };
    expect(view.lastRun).toBeNull();
    const slotsSeen = () => new Set(jobs.map((j) => j.headers['AR-Schedule-Slot'])).size;
    await eventually(() => slotsSeen() >= SLOTS || undefined, `${SLOTS} slots to be delivered`, 90_000, 250);

    // both hosts list it with its last and next run
    const got = (await (await checkedFetch(`${b.url}/schedules/every-second`)).json()) as { lastRun: string; nextRun: string; payload: unknown };
    expect(new Date(got.nextRun).getTime()).toBeGreaterThan(new Date(got.lastRun).getTime());
    const list = (await (await checkedFetch(`${a.url}/schedules`)).json()) as { items: Array<{ name: string }> };
    expect(list.items.map((i) => i.name)).toContain('every-second');

    expect((await checkedFetch(`${b.url}/schedules/every-second`, { method: 'DELETE' })).status).toBe(204);
    await sleep(3000); // a slot fired just before the delete is still delivered

    const bySlot = new Map<string, number>();
    for (const j of jobs) bySlot.set(j.headers['AR-Schedule-Slot']!, (bySlot.get(j.headers['AR-Schedule-Slot']!) ?? 0) + 1);
    const slots = [...bySlot.keys()].map((s) => new Date(s).getTime()).sort((x, y) => x - y);
    const twice = [...bySlot].filter(([, n]) => n > 1);
    const fired = (h: Host) => h.output.join('').match(/schedules: fired \d+ job/g)?.length ?? 0;
    console.log(`[e2e:schedules] ${jobs.length} jobs for ${slots.length} slots, ${twice.length} slot(s) twice; evaluations that fired: host A ${fired(a)}, host B ${fired(b)}`);
    expect(twice).toEqual([]);
    expect(slots.length).toBeGreaterThanOrEqual(SLOTS);
    // consecutive: every second from the first slot to the last, none skipped
    expect((slots.at(-1)! - slots[0]!) / 1000).toBe(slots.length - 1);
    expect(new Set(jobs.map((j) => j.id)).size).toBe(jobs.length);
    expect(jobs[0]).toMatchObject({ headers: { tenant: 't1', 'AR-Schedule': 'every-second' } });
    expect(jobs.length).toBe(slots.length);

    // deleted: no further slot
    const after = jobs.length;
    await sleep(2500);
    expect(jobs.length).toBe(after);
  }, 150_000);

  it('pause stops the slots, resume starts from the next slot after now', async () => {
    expect((await put(`${a.url}/schedules/pausable`, { queue: 'worker', cron: '*/1 * * * * *', payload: 'p' })).status).toBe(201);
    const count = () => jobs.filter((j) => j.headers['AR-Schedule'] === 'pausable').length;
    await eventually(() => count() >= 2 || undefined, 'the first slots of the pausable schedule', 30_000, 200);
    const paused = await checkedFetch(`${b.url}/schedules/pausable/pause`, { method: 'POST' });
    expect(((await paused.json()) as { paused: boolean }).paused).toBe(true);
    await sleep(2000); // a firing already under way when the pause landed
    const atPause = count();
    await sleep(3000);
    expect(count()).toBe(atPause);
    const resumed = await checkedFetch(`${a.url}/schedules/pausable/resume`, { method: 'POST' });
    expect(((await resumed.json()) as { paused: boolean }).paused).toBe(false);
    await eventually(() => count() > atPause || undefined, 'a slot after the resume', 30_000, 200);
    const pausedSlots = jobs.filter((j) => j.headers['AR-Schedule'] === 'pausable').map((j) => j.headers['AR-Schedule-Slot']);
    expect(new Set(pausedSlots).size).toBe(pausedSlots.length);
    expect((await checkedFetch(`${a.url}/schedules/pausable`, { method: 'DELETE' })).status).toBe(204);
  }, 90_000);
});
