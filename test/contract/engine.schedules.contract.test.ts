// engine.schedules on PGlite, with the drain requests of queue mode recorded: a created schedule announces an
// evaluation for its next slot; an evaluation that fires a slot wakes and announces the queue and announces the
// next slot; start-up (announcePending) announces the soonest slot; a handler drains the slot's job with the
// schedule headers and the payload byte for byte. Without drain requests nothing is announced (timer mode).
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEDULES_TARGET } from '../../shared/drain-requests/message';
import type { DrainAnnouncer } from '../../shared/drain-requests/sender';
import { createEngine, type Engine } from '../../shared/index';
import { RawJson } from '../../shared/json/raw-json';
import { silentLogger } from '../../shared/log';
import { ScheduleRejectedError } from '../../shared/schedules/service';
import { sleep } from '../support/messages';

const engines: Engine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
});

async function engine(drainRequests?: DrainAnnouncer, seen: Array<{ payload: string; headers: Record<string, string> }> = []) {
  const e = await createEngine({
    store: { kind: 'pglite', dataDir: 'memory://' },
    queues: { jobs: { handler: async (job) => void seen.push({ payload: job.payloadJson, headers: job.headers }) } },
    topics: {},
    drainRequests,
    logger: silentLogger,
  });
  engines.push(e);
  await e.store.ensureSchema();
  return e;
}

// opening a PGlite engine takes seconds (tens of them on a loaded machine)
const SLOW = { timeout: 120_000 };

describe('[pglite] engine.schedules', () => {
  it('announces the next slot, fires it once, wakes and announces the queue, and a drain runs the job', SLOW, async () => {
    const calls: Array<[string, number]> = [];
    const seen: Array<{ payload: string; headers: Record<string, string> }> = [];
    const e = await engine({ announce: (t, ms) => void calls.push([t, ms]) }, seen);
    const { schedule, created } = await e.schedules.put('tick', { queue: 'jobs', cron: '*/1 * * * * *', payload: RawJson.parse('{"n":9007199254740993}') });
    expect(created).toBe(true);
    const first = calls.find(([t]) => t === SCHEDULES_TARGET);
    expect(first?.[1]).toBeGreaterThan(0);
    expect(first?.[1]).toBeLessThanOrEqual(1000);
    await sleep(schedule.nextSlot!.getTime() - Date.now() + 50);
    calls.length = 0;
    const report = await e.schedules.evaluateDue();
    expect(report).toMatchObject({ due: 1, advanced: 1, jobs: 1 });
    expect(calls).toContainEqual(['jobs', 0]);
    expect(calls.some(([t, ms]) => t === SCHEDULES_TARGET && ms > 0 && ms <= 1000)).toBe(true);
    const drained = await e.drain('jobs', { budgetMs: 2000, idleGraceMs: 100 });
    expect(drained.completed).toBe(1);
    expect(seen[0]!.payload).toBe('{"n":9007199254740993}');
    expect(seen[0]!.headers).toMatchObject({ 'AR-Schedule': 'tick', 'AR-Schedule-Slot': schedule.nextSlot!.toISOString() });
    const row = await e.schedules.get('tick');
    expect(row?.lastSlot?.toISOString()).toBe(schedule.nextSlot!.toISOString());

    calls.length = 0;
    await e.announcePending();
    expect(calls.some(([t]) => t === SCHEDULES_TARGET)).toBe(true);
  });

  it('a paused schedule is not announced and not fired; list and delete', SLOW, async () => {
    const calls: Array<[string, number]> = [];
    const e = await engine({ announce: (t, ms) => void calls.push([t, ms]) });
    await e.schedules.put('quiet', { queue: 'jobs', cron: '*/1 * * * * *', paused: true });
    expect(calls).toEqual([]);
    await sleep(1100);
    expect((await e.schedules.evaluateDue()).jobs).toBe(0);
    expect((await e.schedules.list()).map((s) => s.name)).toEqual(['quiet']);
    expect(await e.schedules.delete('quiet')).toBe(true);
    expect(await e.schedules.get('quiet')).toBeNull();
  });

  it('without drain requests (timer mode) nothing is announced; invalid input is a ScheduleRejectedError', SLOW, async () => {
    const e = await engine();
    await e.schedules.put('t', { queue: 'jobs', cron: '0 0 * * * *' });
    await expect(e.schedules.put('t', { queue: 'jobs', cron: 'nope' })).rejects.toBeInstanceOf(ScheduleRejectedError);
    await expect(e.schedules.put('x', { topic: 'none', cron: '0 0 * * * *' })).rejects.toThrow(/topic 'none' is not configured/);
    expect((await e.schedules.get('t'))?.cron).toBe('0 0 * * * *');
  });
});
