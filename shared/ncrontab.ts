// NCRONTAB schedules as the Functions timer trigger reads them: six fields, seconds first, UTC.
// Like NCrontab (the .NET library behind the timer trigger), a date must match BOTH the day-of-month
// and the day-of-week fields; classic Vixie cron ORs them when both are restricted, NCrontab does not.
// The TimeSpan form ("hh:mm:ss" or "d.hh:mm:ss") is a fixed interval, as on App Service plans.

export class NcrontabError extends Error {
  constructor(
    message: string,
    readonly field?: FieldName,
  ) {
    super(message);
    this.name = 'NcrontabError';
  }
}

export type FieldName = 'second' | 'minute' | 'hour' | 'day' | 'month' | 'day-of-week';

export type Schedule =
  | {
      kind: 'cron';
      expression: string;
      seconds: number[];
      minutes: number[];
      hours: number[];
      days: number[];
      months: number[];
      daysOfWeek: ReadonlySet<number>;
    }
  | { kind: 'interval'; expression: string; intervalMs: number };

interface FieldSpec {
  name: FieldName;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTH_NAMES = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september',
  'october', 'november', 'december'];
const DAY_NAMES = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

const FIELDS: readonly FieldSpec[] = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  // 7 is accepted as Sunday (as in most crons) and folded to 0 after parsing.
  { name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES },
];

/** The top of "*" and "a/n": day-of-week stops at 6 so Sunday is not counted twice. */
const openEnd = (spec: FieldSpec): number => (spec.name === 'day-of-week' ? 6 : spec.max);

const TIMESPAN = /^(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2})$/;

export function parseSchedule(expression: string): Schedule {
  const text = expression.trim();
  const span = TIMESPAN.exec(text);
  if (span) return parseTimeSpan(text, span);

  const parts = text.split(/\s+/).filter((p) => p.length > 0);
  if (parts.length !== 6) {
    throw new NcrontabError(
      `Invalid NCRONTAB expression "${expression}": expected 6 fields (second minute hour day month ` +
        `day-of-week) or a TimeSpan "hh:mm:ss", got ${parts.length} field(s).`,
    );
  }
  const values = FIELDS.map((spec, i) => parseField(expression, spec, parts[i] ?? ''));
  const [seconds, minutes, hours, days, months, dow] = values as [number[], number[], number[], number[], number[], number[]];
  return {
    kind: 'cron',
    expression: text,
    seconds,
    minutes,
    hours,
    days,
    months,
    daysOfWeek: new Set(dow.map((d) => (d === 7 ? 0 : d))),
  };
}

function parseTimeSpan(expression: string, m: RegExpExecArray): Schedule {
  const [days, hours, minutes, seconds] = [m[1] ?? '0', m[2] ?? '0', m[3] ?? '0', m[4] ?? '0'].map(Number) as [
    number, number, number, number,
  ];
  if (hours > 23 || minutes > 59 || seconds > 59) {
    throw new NcrontabError(`Invalid TimeSpan schedule "${expression}": hours must be 0-23, minutes and seconds 0-59.`);
  }
  const intervalMs = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000;
  if (intervalMs <= 0) throw new NcrontabError(`Invalid TimeSpan schedule "${expression}": the interval must be positive.`);
  return { kind: 'interval', expression, intervalMs };
}

function parseField(expression: string, spec: FieldSpec, text: string): number[] {
  const fail = (why: string): never => {
    throw new NcrontabError(`Invalid NCRONTAB expression "${expression}": [${spec.name}] field "${text}" ${why}.`, spec.name);
  };
  const selected = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') fail('has an empty list item');
    const [rangeText = '', stepText, extra] = item.split('/');
    if (extra !== undefined) fail('has more than one "/"');
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) fail(`has an invalid step "${stepText}"`);
      step = Number(stepText);
    }
    let first: number;
    let last: number;
    if (rangeText === '*') {
      first = spec.min;
      last = openEnd(spec);
    } else {
      const bounds = rangeText.split('-');
      if (bounds.length > 2) fail(`has an invalid range "${rangeText}"`);
      first = parseValue(spec, bounds[0] ?? '', fail);
      // "a/n" means a..max every n, as in NCrontab.
      last = bounds.length === 2 ? parseValue(spec, bounds[1] ?? '', fail) : stepText !== undefined ? openEnd(spec) : first;
      if (first > last) fail(`has a descending range "${rangeText}"`);
    }
    for (let v = first; v <= last; v += step) selected.add(v);
  }
  return [...selected].sort((a, b) => a - b);
}

function parseValue(spec: FieldSpec, text: string, fail: (why: string) => never): number {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max) fail(`has ${value} outside ${spec.min}-${spec.max}`);
    return value;
  }
  const lower = text.toLowerCase();
  // Full names or any prefix of at least three letters ("Mon", "Sept", "thurs").
  const index = lower.length >= 3 && spec.names ? spec.names.findIndex((n) => n.startsWith(lower)) : -1;
  if (index < 0) {
    return fail(text === '' ? 'has an empty value' : `has an unknown value "${text}"`);
  }
  return index + (spec.name === 'month' ? 1 : 0);
}

/** The first occurrence strictly after `after` (UTC). Throws when the schedule can never fire. */
export function nextOccurrence(schedule: string | Schedule, after: Date): Date {
  const s = typeof schedule === 'string' ? parseSchedule(schedule) : schedule;
  if (s.kind === 'interval') return new Date(after.getTime() + s.intervalMs);

  // Occurrences have whole seconds: start at the next whole second after `after`.
  const start = new Date(Math.floor(after.getTime() / 1000) * 1000 + 1000);
  const y0 = start.getUTCFullYear();
  const mo0 = start.getUTCMonth() + 1;
  const d0 = start.getUTCDate();
  const h0 = start.getUTCHours();
  const mi0 = start.getUTCMinutes();
  const s0 = start.getUTCSeconds();

  // The Gregorian calendar repeats every 400 years, so nothing within 400 years means never.
  for (let year = y0; year <= y0 + 400; year++) {
    for (const month of s.months) {
      if (year === y0 && month < mo0) continue;
      const sameMonth = year === y0 && month === mo0;
      const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
      for (const day of s.days) {
        if (day > lastDay) break;
        if (sameMonth && day < d0) continue;
        if (!s.daysOfWeek.has(new Date(Date.UTC(year, month - 1, day)).getUTCDay())) continue;
        const sameDay = sameMonth && day === d0;
        for (const hour of s.hours) {
          if (sameDay && hour < h0) continue;
          const sameHour = sameDay && hour === h0;
          for (const minute of s.minutes) {
            if (sameHour && minute < mi0) continue;
            const sameMinute = sameHour && minute === mi0;
            for (const second of s.seconds) {
              if (sameMinute && second < s0) continue;
              return new Date(Date.UTC(year, month - 1, day, hour, minute, second));
            }
          }
        }
      }
    }
  }
  throw new NcrontabError(`NCRONTAB expression "${s.expression}" never occurs.`);
}
