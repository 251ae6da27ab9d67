// A schedule's slots: the instants its NCRONTAB expression names in its IANA time zone, from croner (a maintained
// cron library; the hand-written shared/ncrontab.ts stays with the app's own timers, which are UTC only). Six
// fields as the Functions timer reads them (seconds first) or five (seconds 0). Like NCrontab, a date must match
// both the day-of-month and the day-of-week fields (domAndDow). DST as croner handles it: a fixed time (one
// second, minute and hour) that a spring-forward skips runs once, at the first instant after the gap; one an
// autumn fall-back repeats runs once, at its first occurrence; interval patterns (`*/5 …`) follow real time.

import { Cron } from 'croner';

export class ScheduleCronError extends Error {
  constructor(
    readonly field: 'cron' | 'timeZone',
    message: string,
  ) {
    super(message);
    this.name = 'ScheduleCronError';
  }
}

export interface CronSpec {
  readonly expression: string;
  readonly timeZone: string;
  /** The first slot strictly after `after`; null when the expression names no later instant. */
  next(after: Date): Date | null;
  /** Up to `n` slots at or before `at`, newest first. */
  previous(n: number, at: Date): Date[];
}

export const DEFAULT_TIME_ZONE = 'UTC';

/** Whether the runtime knows the IANA zone (Intl: full ICU in Node 20). */
export function timeZoneProblem(zone: string): string | null {
  if (zone.trim() === '' || zone !== zone.trim()) return 'must be an IANA time zone name such as Europe/Berlin or UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return null;
  } catch {
    return `'${zone}' is not an IANA time zone this runtime knows (for example Europe/Berlin, America/New_York, UTC)`;
  }
}

/** Parses and validates; throws ScheduleCronError naming the field at fault. */
export function parseCron(expression: string, timeZone: string = DEFAULT_TIME_ZONE): CronSpec {
  const zoneProblem = timeZoneProblem(timeZone);
  if (zoneProblem) throw new ScheduleCronError('timeZone', zoneProblem);
  const text = expression.trim();
  const fields = text.split(/\s+/).length;
  if (text.startsWith('@') || (fields !== 5 && fields !== 6)) {
    throw new ScheduleCronError('cron', `'${expression}' must have six fields (second minute hour day month day-of-week, as the Functions timer) or five (seconds 0)`);
  }
  let cron: Cron;
  try {
    cron = new Cron(text, { timezone: timeZone, paused: true, mode: '5-or-6-parts', domAndDow: true });
  } catch (err) {
    throw new ScheduleCronError('cron', `'${expression}' is not a valid NCRONTAB expression: ${(err as Error).message.replace(/^CronPattern: /, '')}`);
  }
  // a valid pattern that names no date (30 February): refused now rather than a schedule that never runs
  if (cron.nextRun(new Date()) === null) throw new ScheduleCronError('cron', `'${expression}' names no future instant`);
  return {
    expression: text,
    timeZone,
    next: (after) => cron.nextRun(after),
    // croner's previousRuns is strictly before the reference: a slot exactly at `at` is due too
    previous: (n, at) => cron.previousRuns(n, new Date(at.getTime() + 1)),
  };
}
