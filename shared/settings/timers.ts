// When drains and the timers run: the drain budget and idle grace, every timer's NCRONTAB schedule (their
// defaults depend on DRAIN_TRIGGER: frequent timers in timer mode, a 5-minute safety net in queue mode), and the
// checks that a drain invocation fits in host.json's functionTimeout and that every schedule runs on Flex.

import { parseSchedule } from '../ncrontab';
import type { Readers } from './env';
import { QUEUE_MODE_SCHEDULE } from './drain-requests';

/** host.json functionTimeout (10 min) less a minute for settling, releasing and closing. */
const MAX_INVOCATION_MS = 540_000;

export interface TimerSettings {
  drain: { schedule: string; budgetMs: number; idleGraceMs: number };
  pruneSchedule: string;
  /** NCRONTAB schedule of the queue-metrics timer (queue depth gauges; runs only when telemetry is on). */
  queueMetricsSchedule: string;
}

/** A schedule setting, or its default in the drain mode. */
export function scheduleReader({ str }: Readers, queueMode: boolean): (name: string, timerMode: string) => string {
  return (name, timerMode) => str(name) ?? (queueMode ? QUEUE_MODE_SCHEDULE : timerMode);
}

export function readTimers(read: Readers, queueMode: boolean): TimerSettings {
  const budgetMs = read.num('DRAIN_BUDGET_SECONDS', 8, { min: 0.1, max: 600 }) * 1000;
  // queue mode: the timers are a safety net; one claim finds a queue empty and the run ends
  const idleGraceMs = read.num('DRAIN_IDLE_GRACE_SECONDS', queueMode ? 0 : budgetMs / 1000, { min: 0, max: 600 }) * 1000;
  const schedule = scheduleReader(read, queueMode);
  return {
    drain: { schedule: schedule('DRAIN_WORKER_SCHEDULE', '*/10 * * * * *'), budgetMs, idleGraceMs },
    pruneSchedule: schedule('PRUNE_DEADLETTERS_SCHEDULE', '0 * * * * *'),
    queueMetricsSchedule: schedule('QUEUE_METRICS_SCHEDULE', '0 * * * * *'),
  };
}

/**
 * One drain invocation = claiming for the budget + the longest handler started at its end: it has to end inside
 * host.json's functionTimeout (10 min), or the host kills the worker mid-settlement.
 */
export function checkInvocationFits(budgetMs: number, longestHandlerMs: number, problems: string[]): void {
  if (budgetMs + longestHandlerMs > MAX_INVOCATION_MS) {
    problems.push(
      `DRAIN_BUDGET_SECONDS (${budgetMs / 1000}) plus the longest handler timeout (${longestHandlerMs / 1000} s: WORKER_FORWARD_TIMEOUT_SECONDS / QUEUE__<key>__FORWARD_TIMEOUT_SECONDS / CALLBACK_TIMEOUT_SECONDS) must stay within ${MAX_INVOCATION_MS / 1000} s, inside host.json's functionTimeout of 10 minutes`,
    );
  }
}

export function checkSchedules(schedules: ReadonlyArray<readonly [name: string, expression: string]>, problems: string[]): void {
  for (const [name, expression] of schedules) {
    try {
      parseSchedule(expression);
      if (expression.trim().split(/\s+/).length !== 6) {
        // the local host understands TimeSpan schedules, Flex Consumption does not (App Service plans only)
        problems.push(`${name}='${expression}': use a six-field NCRONTAB expression; TimeSpan schedules (hh:mm:ss) run only on App Service plans, not on Flex Consumption`);
      }
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }
}
