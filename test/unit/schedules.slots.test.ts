// Schedule slots (croner): six and five fields, IANA zones, DST (a skipped 02:30 runs once, a repeated one once),
// the misfire policies, and the deterministic occurrence ids.

import { describe, expect, it } from 'vitest';
import { parseCron, ScheduleCronError } from '../../shared/schedules/cron';
import { MISFIRE_GRACE_MS, planSlots } from '../../shared/schedules/misfire';
import { occurrenceId } from '../../shared/schedules/occurrence-id';

const iso = (d: Date | null) => d?.toISOString() ?? null;
const runs = (cron: string, zone: string, from: string, n: number) => {
  const spec = parseCron(cron, zone);
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < n; i++) {
    const next = spec.next(at)!;
    out.push(next.toISOString());
    at = next;
  }
  return out;
};

describe('NCRONTAB fields', () => {
  it('six fields put seconds first, as the Functions timer', () => {
    expect(runs('*/20 * * * * *', 'UTC', '2026-10-31T12:00:00.500Z', 3)).toEqual(['2026-10-31T12:00:20.000Z', '2026-10-31T12:00:40.000Z', '2026-10-31T12:01:00.000Z']);
    expect(runs('0 30 9 * * 1-5', 'UTC', '2026-12-04T10:00:00Z', 2)).toEqual(['2026-12-07T09:30:00.000Z', '2026-12-08T09:30:00.000Z']); // Fri → Mon
  });

  it('five fields are minute first, at second 0', () => {
    expect(runs('15 */6 * * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual(['2026-01-01T00:15:00.000Z', '2026-01-01T06:15:00.000Z', '2026-01-01T12:15:00.000Z']);
  });

  it('next is strictly after the instant given: a slot exactly now is not next', () => {
    const spec = parseCron('*/10 * * * * *');
    expect(iso(spec.next(new Date('2026-01-01T00:00:10.000Z')))).toBe('2026-01-01T00:00:20.000Z');
    expect(spec.previous(2, new Date('2026-01-01T00:00:10.000Z')).map(iso)).toEqual(['2026-01-01T00:00:10.000Z', '2026-01-01T00:00:00.000Z']);
  });

  it('day-of-month AND day-of-week must both match, as NCrontab (not Vixie cron’s OR)', () => {
    // the 13th that is a Friday: November 2026
    expect(runs('0 0 0 13 * 5', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-02-13T00:00:00.000Z']);
    expect(runs('0 0 0 13 * 5', 'UTC', '2026-02-14T00:00:00Z', 1)).toEqual(['2026-03-13T00:00:00.000Z']);
  });

  it('a zone moves the wall clock: 09:00 in Berlin is 08:00Z in winter, 07:00Z in summer', () => {
    expect(runs('0 0 9 * * *', 'Europe/Berlin', '2026-01-10T00:00:00Z', 1)).toEqual(['2026-01-10T08:00:00.000Z']);
    expect(runs('0 0 9 * * *', 'Europe/Berlin', '2026-07-10T00:00:00Z', 1)).toEqual(['2026-07-10T07:00:00.000Z']);
  });

  it.each([
    ['61 * * * * *', 'cron'],
    ['* * * *', 'cron'],
    ['* * * * * * *', 'cron'],
    ['@daily', 'cron'],
    ['0 0 0 30 2 *', 'cron'], // 30 February: no instant
    ['not a cron', 'cron'],
  ])('%s is refused (field %s)', (cron, field) => {
    expect(() => parseCron(cron)).toThrow(ScheduleCronError);
    try {
      parseCron(cron);
    } catch (err) {
      expect((err as ScheduleCronError).field).toBe(field);
    }
  });

  it('an unknown zone is refused on the timeZone field', () => {
    expect(() => parseCron('0 * * * * *', 'Mars/Olympus_Mons')).toThrow(/not an IANA time zone/);
    try {
      parseCron('0 * * * * *', 'Mars/Olympus_Mons');
    } catch (err) {
      expect((err as ScheduleCronError).field).toBe('timeZone');
    }
  });
});

describe('DST', () => {
  // Europe/Berlin: 2026-03-29 02:00 CET → 03:00 CEST; 2026-10-25 03:00 CEST → 02:00 CET
  it('Europe/Berlin spring forward: the 02:30 that does not exist runs once, right after the gap', () => {
    const days = runs('0 30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 4);
    expect(days).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
    expect(days.filter((d) => d.startsWith('2026-03-29'))).toHaveLength(1);
  });

  it('Europe/Berlin fall back: the 02:30 that happens twice runs once (its first occurrence)', () => {
    const days = runs('0 30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 3);
    expect(days).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z', '2026-10-27T01:30:00.000Z']);
  });

  // America/New_York: 2026-03-08 02:00 EST → 03:00 EDT; 2026-11-01 02:00 EDT → 01:00 EST
  it('America/New_York spring forward: 02:30 runs once on 8 March', () => {
    const days = runs('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 3);
    expect(days).toEqual(['2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z']);
  });

  it('America/New_York fall back: 01:30 (which happens twice on 1 November) runs once', () => {
    const days = runs('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 3);
    expect(days).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z', '2026-11-03T06:30:00.000Z']);
  });

  it('an interval pattern follows real time through the repeated hour (each instant once)', () => {
    const slots = runs('0 0 * * * *', 'America/New_York', '2026-11-01T04:30:00Z', 3);
    expect(slots).toEqual(['2026-11-01T05:00:00.000Z', '2026-11-01T06:00:00.000Z', '2026-11-01T07:00:00.000Z']);
    expect(new Set(slots).size).toBe(3);
  });
});

describe('misfire', () => {
  const everyMinute = parseCron('0 * * * * *');
  const at = (s: string) => new Date(s);

  it('nothing due: no slot fires, the next slot stays', () => {
    const plan = planSlots(everyMinute, at('2026-01-01T00:05:00Z'), at('2026-01-01T00:04:30Z'), { policy: 'skip' });
    expect(plan.fire).toEqual([]);
    expect(iso(plan.next)).toBe('2026-01-01T00:05:00.000Z');
  });

  it('an on-time slot fires under either policy', () => {
    for (const misfire of [{ policy: 'skip' } as const, { policy: 'catchUp', max: 3 } as const]) {
      const plan = planSlots(everyMinute, at('2026-01-01T00:05:00Z'), at('2026-01-01T00:05:02Z'), misfire);
      expect(plan.fire.map(iso)).toEqual(['2026-01-01T00:05:00.000Z']);
      expect(iso(plan.newest)).toBe('2026-01-01T00:05:00.000Z');
      expect(iso(plan.next)).toBe('2026-01-01T00:06:00.000Z');
    }
  });

  it('skip: slots missed by more than the grace do not run; the on-time one does', () => {
    const now = at('2026-01-01T01:00:30Z'); // down from 00:05 to 01:00:30
    const plan = planSlots(everyMinute, at('2026-01-01T00:05:00Z'), now, { policy: 'skip' });
    expect(plan.fire.map(iso)).toEqual(['2026-01-01T01:00:00.000Z']);
    expect(plan.fire.every((s) => now.getTime() - s.getTime() <= MISFIRE_GRACE_MS)).toBe(true);
    expect(iso(plan.newest)).toBe('2026-01-01T01:00:00.000Z');
    expect(iso(plan.next)).toBe('2026-01-01T01:01:00.000Z');
  });

  it('skip: everything missed, nothing on time: nothing fires and the row still moves on', () => {
    const daily = parseCron('0 0 3 * * *');
    const plan = planSlots(daily, at('2026-01-01T03:00:00Z'), at('2026-01-04T12:00:00Z'), { policy: 'skip' });
    expect(plan.fire).toEqual([]);
    expect(iso(plan.newest)).toBe('2026-01-04T03:00:00.000Z');
    expect(iso(plan.next)).toBe('2026-01-05T03:00:00.000Z');
  });

  it('catch up at most N: the newest N missed slots run late, in slot order, older ones are skipped', () => {
    const daily = parseCron('0 0 3 * * *');
    const plan = planSlots(daily, at('2026-01-01T03:00:00Z'), at('2026-01-06T12:00:00Z'), { policy: 'catchUp', max: 2 });
    expect(plan.fire.map(iso)).toEqual(['2026-01-05T03:00:00.000Z', '2026-01-06T03:00:00.000Z']);
    const all = planSlots(daily, at('2026-01-01T03:00:00Z'), at('2026-01-03T12:00:00Z'), { policy: 'catchUp', max: 10 });
    expect(all.fire.map(iso)).toEqual(['2026-01-01T03:00:00.000Z', '2026-01-02T03:00:00.000Z', '2026-01-03T03:00:00.000Z']);
  });

  it('catch up never reaches back before the row’s next slot', () => {
    const plan = planSlots(everyMinute, at('2026-01-01T00:58:00Z'), at('2026-01-01T01:00:00Z'), { policy: 'catchUp', max: 100 });
    expect(plan.fire.map(iso)).toEqual(['2026-01-01T00:58:00.000Z', '2026-01-01T00:59:00.000Z', '2026-01-01T01:00:00.000Z']);
  });
});

describe('occurrence ids', () => {
  it('are deterministic per (schedule, slot), distinct across both, and UUID version 8', () => {
    const slot = new Date('2026-01-01T00:00:00Z');
    const id = occurrenceId('nightly', slot);
    expect(id).toBe(occurrenceId('nightly', new Date(slot.getTime())));
    expect(id).not.toBe(occurrenceId('nightly', new Date(slot.getTime() + 1000)));
    expect(id).not.toBe(occurrenceId('nightly2', slot));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
