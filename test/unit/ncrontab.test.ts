import { describe, expect, it } from 'vitest';
import { NcrontabError, nextOccurrence, parseSchedule } from '../../shared/ncrontab';

const at = (iso: string): Date => new Date(iso);
const next = (expr: string, after: string): string => nextOccurrence(expr, at(after)).toISOString();

/** The first `n` occurrences after `after`. */
function occurrences(expr: string, after: string, n: number): string[] {
  const out: string[] = [];
  let t = at(after);
  for (let i = 0; i < n; i++) {
    t = nextOccurrence(expr, t);
    out.push(t.toISOString());
  }
  return out;
}

function fieldOf(expr: string): string | undefined {
  try {
    parseSchedule(expr);
  } catch (err) {
    expect(err).toBeInstanceOf(NcrontabError);
    return (err as NcrontabError).field ?? 'none';
  }
  return undefined;
}

describe('NCRONTAB next occurrence', () => {
  it('is strictly after the given time, at whole seconds', () => {
    expect(next('* * * * * *', '2024-03-01T10:00:00.000Z')).toBe('2024-03-01T10:00:01.000Z');
    expect(next('* * * * * *', '2024-03-01T10:00:00.400Z')).toBe('2024-03-01T10:00:01.000Z');
    expect(next('0 * * * * *', '2024-03-01T10:00:00.000Z')).toBe('2024-03-01T10:01:00.000Z');
  });

  it('reads the seconds field first', () => {
    expect(occurrences('*/15 * * * * *', '2024-03-01T10:00:00Z', 5)).toEqual([
      '2024-03-01T10:00:15.000Z', '2024-03-01T10:00:30.000Z', '2024-03-01T10:00:45.000Z',
      '2024-03-01T10:01:00.000Z', '2024-03-01T10:01:15.000Z',
    ]);
    expect(next('30 0 * * * *', '2024-03-01T10:00:30Z')).toBe('2024-03-01T11:00:30.000Z');
  });

  it('supports lists, ranges, stepped ranges and value/step', () => {
    expect(occurrences('0 5,10,50 * * * *', '2024-03-01T10:06:00Z', 3)).toEqual([
      '2024-03-01T10:10:00.000Z', '2024-03-01T10:50:00.000Z', '2024-03-01T11:05:00.000Z',
    ]);
    expect(occurrences('0 0 9-11 * * *', '2024-03-01T10:00:00Z', 3)).toEqual([
      '2024-03-01T11:00:00.000Z', '2024-03-02T09:00:00.000Z', '2024-03-02T10:00:00.000Z',
    ]);
    expect(occurrences('0 10-30/10 * * * *', '2024-03-01T10:00:00Z', 4)).toEqual([
      '2024-03-01T10:10:00.000Z', '2024-03-01T10:20:00.000Z', '2024-03-01T10:30:00.000Z', '2024-03-01T11:10:00.000Z',
    ]);
    // "a/n" runs from a to the end of the range, as in NCrontab.
    expect(occurrences('0 45/5 * * * *', '2024-03-01T10:00:00Z', 4)).toEqual([
      '2024-03-01T10:45:00.000Z', '2024-03-01T10:50:00.000Z', '2024-03-01T10:55:00.000Z', '2024-03-01T11:45:00.000Z',
    ]);
    expect(occurrences('0 0,30 8-9,17 * * *', '2024-03-01T00:00:00Z', 6)).toEqual([
      '2024-03-01T08:00:00.000Z', '2024-03-01T08:30:00.000Z', '2024-03-01T09:00:00.000Z',
      '2024-03-01T09:30:00.000Z', '2024-03-01T17:00:00.000Z', '2024-03-01T17:30:00.000Z',
    ]);
  });

  it('runs the typical Functions examples', () => {
    expect(next('0 */5 * * * *', '2024-03-01T10:02:13Z')).toBe('2024-03-01T10:05:00.000Z');
    expect(next('0 0 * * * *', '2024-03-01T10:02:13Z')).toBe('2024-03-01T11:00:00.000Z');
    expect(next('0 30 9 * * 1-5', '2024-03-01T10:00:00Z')).toBe('2024-03-04T09:30:00.000Z'); // Fri → Mon
    expect(next('0 0 0 1 1 *', '2024-03-01T00:00:00Z')).toBe('2025-01-01T00:00:00.000Z');
  });

  it('rolls over minutes, hours, days, months and years', () => {
    expect(next('* * * * * *', '2024-03-01T10:59:59Z')).toBe('2024-03-01T11:00:00.000Z');
    expect(next('* * * * * *', '2024-03-31T23:59:59Z')).toBe('2024-04-01T00:00:00.000Z');
    expect(next('* * * * * *', '2024-12-31T23:59:59.999Z')).toBe('2025-01-01T00:00:00.000Z');
    expect(next('0 0 0 * * *', '2024-02-28T12:00:00Z')).toBe('2024-02-29T00:00:00.000Z');
    expect(next('0 0 0 * * *', '2023-02-28T12:00:00Z')).toBe('2023-03-01T00:00:00.000Z');
  });

  it('skips months that lack the day', () => {
    expect(occurrences('0 0 0 31 * *', '2024-01-31T00:00:00Z', 3)).toEqual([
      '2024-03-31T00:00:00.000Z', '2024-05-31T00:00:00.000Z', '2024-07-31T00:00:00.000Z',
    ]);
    expect(occurrences('0 0 0 15,31 * *', '2024-01-01T00:00:00Z', 4)).toEqual([
      '2024-01-15T00:00:00.000Z', '2024-01-31T00:00:00.000Z', '2024-02-15T00:00:00.000Z', '2024-03-15T00:00:00.000Z',
    ]);
  });

  it('finds the next leap day', () => {
    expect(next('0 0 12 29 2 *', '2024-03-01T00:00:00Z')).toBe('2028-02-29T12:00:00.000Z');
    expect(next('0 0 12 29 Feb *', '2096-03-01T00:00:00Z')).toBe('2104-02-29T12:00:00.000Z'); // 2100 is not a leap year
  });

  it('accepts month and day-of-week names, any case, full or abbreviated', () => {
    expect(next('0 0 0 1 Jun *', '2024-03-01T00:00:00Z')).toBe('2024-06-01T00:00:00.000Z');
    expect(next('0 0 0 1 june *', '2024-03-01T00:00:00Z')).toBe('2024-06-01T00:00:00.000Z');
    expect(next('0 0 0 1 Jan-Mar *', '2024-03-02T00:00:00Z')).toBe('2025-01-01T00:00:00.000Z');
    expect(next('0 0 8 * * Mon', '2024-03-01T00:00:00Z')).toBe('2024-03-04T08:00:00.000Z');
    expect(next('0 0 8 * * SATURDAY', '2024-03-01T00:00:00Z')).toBe('2024-03-02T08:00:00.000Z');
    expect(occurrences('0 0 8 * * Mon-Wed,Fri', '2024-03-01T09:00:00Z', 4)).toEqual([
      '2024-03-04T08:00:00.000Z', '2024-03-05T08:00:00.000Z', '2024-03-06T08:00:00.000Z', '2024-03-08T08:00:00.000Z',
    ]);
  });

  it('treats day-of-week 0 and 7 as Sunday', () => {
    expect(next('0 0 0 * * 0', '2024-03-01T00:00:00Z')).toBe('2024-03-03T00:00:00.000Z');
    expect(next('0 0 0 * * 7', '2024-03-01T00:00:00Z')).toBe('2024-03-03T00:00:00.000Z');
    expect(next('0 0 0 * * 5-7', '2024-03-02T00:00:00Z')).toBe('2024-03-03T00:00:00.000Z');
  });

  it('needs both day-of-month and day-of-week to match, like NCrontab', () => {
    // Friday the 13th: 2024-09-13 and 2024-12-13 are Fridays.
    expect(occurrences('0 0 0 13 * Fri', '2024-03-01T00:00:00Z', 2)).toEqual([
      '2024-09-13T00:00:00.000Z', '2024-12-13T00:00:00.000Z',
    ]);
  });

  it('is in UTC whatever the local time zone', () => {
    expect(next('0 0 2 * * *', '2024-03-31T01:30:00Z')).toBe('2024-03-31T02:00:00.000Z');
  });

  it('reads the TimeSpan form as a fixed interval', () => {
    expect(next('00:05:00', '2024-03-01T10:00:00.250Z')).toBe('2024-03-01T10:05:00.250Z');
    expect(next('01:00:00', '2024-03-01T10:00:00Z')).toBe('2024-03-01T11:00:00.000Z');
    expect(next('1.00:00:00', '2024-03-01T10:00:00Z')).toBe('2024-03-02T10:00:00.000Z');
    expect(parseSchedule('00:00:30')).toMatchObject({ kind: 'interval', intervalMs: 30_000 });
  });
});

describe('NCRONTAB validation', () => {
  it('rejects the wrong number of fields', () => {
    expect(fieldOf('* * * * *')).toBe('none');
    expect(fieldOf('* * * * * * *')).toBe('none');
    expect(fieldOf('')).toBe('none');
    expect(() => parseSchedule('0 * * * *')).toThrow(/expected 6 fields/);
  });

  it('names the field that is out of range', () => {
    expect(fieldOf('60 * * * * *')).toBe('second');
    expect(fieldOf('* 60 * * * *')).toBe('minute');
    expect(fieldOf('* * 24 * * *')).toBe('hour');
    expect(fieldOf('* * * 0 * *')).toBe('day');
    expect(fieldOf('* * * 32 * *')).toBe('day');
    expect(fieldOf('* * * * 13 *')).toBe('month');
    expect(fieldOf('* * * * 0 *')).toBe('month');
    expect(fieldOf('* * * * * 8')).toBe('day-of-week');
    expect(() => parseSchedule('* 99 * * * *')).toThrow(/\[minute\].*99 outside 0-59/);
  });

  it('names the field with bad syntax', () => {
    expect(fieldOf('*/0 * * * * *')).toBe('second');
    expect(fieldOf('* */x * * * *')).toBe('minute');
    expect(fieldOf('* * 10-5 * * *')).toBe('hour');
    expect(fieldOf('* * * 1,,2 * *')).toBe('day');
    expect(fieldOf('* * * * Foo *')).toBe('month');
    expect(fieldOf('* * * * * Mo')).toBe('day-of-week');
    expect(fieldOf('* * * * * Jan')).toBe('day-of-week');
    expect(fieldOf('* * 1-2-3 * * *')).toBe('hour');
    expect(fieldOf('* * * 1/2/3 * *')).toBe('day');
    expect(fieldOf('a * * * * *')).toBe('second');
  });

  it('rejects a TimeSpan out of range or zero', () => {
    expect(() => parseSchedule('24:00:00')).toThrow(NcrontabError);
    expect(() => parseSchedule('00:60:00')).toThrow(NcrontabError);
    expect(() => parseSchedule('00:00:00')).toThrow(/positive/);
  });

  it('rejects a schedule that never occurs', () => {
    expect(() => nextOccurrence('0 0 0 30 2 *', at('2024-01-01T00:00:00Z'))).toThrow(/never occurs/);
  });
});
