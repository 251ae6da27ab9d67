// Schedules at run time: create/replace, read, list, delete, pause/resume, and the evaluation that fires due slots.
// No leader and no lock held between slots: every instance may evaluate; a slot's job has an id derived from
// (schedule, slot) and is inserted in the same transaction as the compare-and-set that advances the row's next slot,
// so however many instances evaluate at once, one advance wins and one job per slot exists. After a firing the
// next slot is announced (a drain request that surfaces when it is due, queue mode); the timers that run anyway
// evaluate too, as the safety net: one index seek on the next slot.

import type { Logger } from '../log';
import type { FieldError } from '../validation';
import { parseCron } from './cron';
import { parseScheduleInput, scheduleNameProblem, type ScheduleInput } from './input';
import { planSlots } from './misfire';
import { occurrenceId } from './occurrence-id';
import { SCHEDULE_HEADER, SCHEDULE_SLOT_HEADER, type ScheduleRow, type ScheduleStore, type ScheduleTarget, type SlotJob } from './types';

/** Schedules one evaluation reads at most (the rest are read by the next one, which the timers run anyway). */
export const DUE_BATCH = 100;
export const MAX_LIST = 1000;

export class ScheduleRejectedError extends Error {
  constructor(
    readonly status: 400 | 413,
    readonly detail: string,
    readonly errors: FieldError[],
  ) {
    super(`${detail}${errors.length ? `: ${errors.map((e) => `${e.field || '(body)'} ${e.message}`).join('; ')}` : ''}`);
    this.name = 'ScheduleRejectedError';
  }
}

export interface ScheduleServiceOptions {
  store: ScheduleStore;
  maxMessageBytes: number;
  /** Why a queue or topic cannot be a target (not configured), or null. */
  targetProblem(target: ScheduleTarget): string | null;
  /** Before a topic firing: the configured subscriptions are recorded (the fan-out reads the table). */
  beforeTopicFiring?(): Promise<void>;
  /** Jobs were inserted on these queues: wake local drain loops, announce drains. */
  jobsInserted(queues: readonly string[]): void;
  /** An evaluation is due in `delayMs` (≤ 0: now): a drain request in queue mode; absent in timer mode. */
  announceEvaluation?(delayMs: number): void;
  logger: Logger;
}

export interface EvaluationReport {
  /** Due schedules read. */
  due: number;
  /** Advances this instance won. */
  advanced: number;
  /** Jobs inserted. */
  jobs: number;
}

export interface PutResult {
  schedule: ScheduleRow;
  created: boolean;
}

export interface ScheduleService {
  /** Creates or replaces; throws ScheduleRejectedError for invalid input. */
  put(name: string, input: ScheduleInput | unknown): Promise<PutResult>;
  get(name: string): Promise<ScheduleRow | null>;
  list(): Promise<ScheduleRow[]>;
  delete(name: string): Promise<boolean>;
  /** null: no such schedule. */
  pause(name: string): Promise<ScheduleRow | null>;
  resume(name: string): Promise<ScheduleRow | null>;
  /** Fires what is due (single-flight per service: a call while one runs joins it). */
  evaluateDue(logger?: Logger): Promise<EvaluationReport>;
  /** Announces the soonest next slot (queue mode; an instance calls it as it starts). */
  announceSoonest(): Promise<void>;
}

export function createScheduleService(o: ScheduleServiceOptions): ScheduleService {
  const { store } = o;
  let evaluating: Promise<EvaluationReport> | undefined;

  // only slots still ahead: a slot already due that this evaluation did not fire (its firing failed) is left to
  // the timers, or a failing schedule would ask for an evaluation every second
  const announceAt = (nextSlot: Date | null, now: Date) => {
    if (nextSlot !== null && nextSlot.getTime() > now.getTime()) o.announceEvaluation?.(nextSlot.getTime() - now.getTime());
  };
  const announceSoonest = async () => {
    if (!o.announceEvaluation) return;
    const s = await store.soonest();
    announceAt(s.nextSlot, s.now);
  };

  const checkName = (name: string) => {
    const why = scheduleNameProblem(name);
    if (why) throw new ScheduleRejectedError(400, 'the schedule name is invalid', [{ field: 'name', message: why }]);
  };

  const evaluateOnce = async (logger: Logger): Promise<EvaluationReport> => {
    const report: EvaluationReport = { due: 0, advanced: 0, jobs: 0 };
    const due = await store.due(DUE_BATCH);
    report.due = due.rows.length;
    for (const row of due.rows) {
      try {
        await fireRow(row, due.now, report);
      } catch (err) {
        logger.warn(`schedule '${row.name}': firing its due slot failed; the next evaluation tries again`, err);
      }
    }
    if (due.rows.length === DUE_BATCH) o.announceEvaluation?.(0); // more are due: evaluate again at once
    // nothing fired here: a request that surfaced early (visibility is capped at 7 days) or a slot another
    // instance fired; the soonest slot gets its request (the sender keeps one per target and due second)
    else if (report.advanced === 0) await announceSoonest();
    return report;
  };

  const fireRow = async (row: ScheduleRow, now: Date, report: EvaluationReport): Promise<void> => {
    const spec = parseCron(row.cron, row.timeZone);
    const plan = planSlots(spec, row.nextSlot!, now, row.misfire);
    const jobs: SlotJob[] = plan.fire.map((slot) => ({
      id: occurrenceId(row.name, slot),
      payloadJson: row.payloadJson,
      headers: { ...row.headers, [SCHEDULE_HEADER]: row.name, [SCHEDULE_SLOT_HEADER]: slot.toISOString() },
    }));
    if (row.target.kind === 'topic' && jobs.length > 0) await o.beforeTopicFiring?.();
    const outcome = await store.fire({ name: row.name, expectedNext: row.nextSlot!, lastSlot: plan.newest, nextSlot: plan.next, target: row.target, jobs });
    if (!outcome.advanced) return; // another instance fired it (its announcement covers the next slot)
    report.advanced++;
    report.jobs += outcome.inserted;
    if (outcome.queues.length > 0) o.jobsInserted(outcome.queues);
    announceAt(plan.next, now);
  };

  return {
    async put(name, input) {
      const parsed = parseScheduleInput(name, input, o.maxMessageBytes, o.targetProblem);
      if (!parsed.ok) throw new ScheduleRejectedError(parsed.status, parsed.detail, parsed.errors);
      const now = await store.now();
      const outcome = await store.upsert(parsed.definition, parsed.spec.next(now));
      if (!outcome.row.paused) announceAt(outcome.row.nextSlot, now);
      return { schedule: outcome.row, created: outcome.created };
    },
    async get(name) {
      checkName(name);
      return store.get(name);
    },
    list: () => store.list(MAX_LIST),
    async delete(name) {
      checkName(name);
      return store.delete(name);
    },
    async pause(name) {
      checkName(name);
      return store.setPaused(name, true, null);
    },
    async resume(name) {
      checkName(name);
      const row = await store.get(name);
      if (!row) return null;
      if (!row.paused) return row;
      const now = await store.now();
      const next = parseCron(row.cron, row.timeZone).next(now);
      const resumed = await store.setPaused(name, false, next);
      if (resumed) announceAt(resumed.nextSlot, now);
      return resumed;
    },
    evaluateDue(logger = o.logger) {
      evaluating ??= evaluateOnce(logger).finally(() => (evaluating = undefined));
      return evaluating;
    },
    announceSoonest,
  };
}
