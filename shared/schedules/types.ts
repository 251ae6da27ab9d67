// Recurring schedules (issue 16 §1): a named cron expression in a time zone that publishes one job per slot to a
// queue or a topic. The row is the schedule's whole state: definition, the last slot it fired and the next one.

import type { Headers } from '../transport/types';

export type ScheduleTarget = { kind: 'queue'; name: string } | { kind: 'topic'; name: string };

/** On-time slots always run. skip: slots missed by more than the grace do not; catchUp: the newest `max` of them run late. */
export type MisfirePolicy = { policy: 'skip' } | { policy: 'catchUp'; max: number };

export interface ScheduleDefinition {
  name: string;
  target: ScheduleTarget;
  /** NCRONTAB, six fields (seconds first) or five. */
  cron: string;
  /** IANA zone; UTC by default. */
  timeZone: string;
  /** The payload as raw JSON text, kept byte for byte (shared/json/raw-json.ts). */
  payloadJson: string;
  headers: Headers;
  paused: boolean;
  misfire: MisfirePolicy;
}

export interface ScheduleRow extends ScheduleDefinition {
  /** The newest slot fired (null: none yet). */
  lastSlot: Date | null;
  /** The slot the schedule fires next (null: the expression names no later instant). */
  nextSlot: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A job made for a slot, as the store inserts it together with the slot advance. */
export interface SlotJob {
  id: string;
  payloadJson: string;
  headers: Headers;
}

/** One compare-and-set advance of a schedule and the jobs of the slots it fires, in one transaction. */
export interface SlotFiring {
  name: string;
  /** The row's next_slot as read: the advance matches only while it is still that (and the row is not paused). */
  expectedNext: Date;
  /** The new last slot; null keeps the stored one (nothing was due after all). */
  lastSlot: Date | null;
  nextSlot: Date | null;
  target: ScheduleTarget;
  jobs: readonly SlotJob[];
}

export interface FiringOutcome {
  /** false: another instance advanced (or paused, replaced, deleted) the schedule first; nothing was inserted. */
  advanced: boolean;
  /** Queues that got a new job (a topic's subscription queues), for the wake and the drain requests. */
  queues: string[];
  inserted: number;
}

export interface UpsertOutcome {
  created: boolean;
  /** false when the stored definition was already exactly this one (a static schedule applied again). */
  changed: boolean;
  row: ScheduleRow;
}

/** The schedules table of one schema, one implementation per dialect (stores/postgres/schedule-store.ts, stores/sqlserver/schedule-store.ts). */
export interface ScheduleStore {
  /**
   * Creates or replaces by name. The stored next slot is kept when the cron expression, the zone and the paused
   * state are unchanged (a replace or a re-applied static schedule must not skip or repeat a slot); otherwise it
   * becomes `nextSlot` (computed by the caller from the database clock).
   */
  upsert(definition: ScheduleDefinition, nextSlot: Date | null): Promise<UpsertOutcome>;
  get(name: string): Promise<ScheduleRow | null>;
  /** By name, at most `limit`. */
  list(limit: number): Promise<ScheduleRow[]>;
  delete(name: string): Promise<boolean>;
  /** Pauses (next slot kept for display), or resumes with a fresh next slot (slots passed while paused do not run). null: no such schedule. */
  setPaused(name: string, paused: boolean, nextSlot: Date | null): Promise<ScheduleRow | null>;
  /** Unpaused schedules whose next slot is at or before the database clock, soonest first: one index seek. */
  due(limit: number): Promise<{ rows: ScheduleRow[]; now: Date }>;
  /** The soonest next slot of any unpaused schedule (null: none), and the database clock. */
  soonest(): Promise<{ nextSlot: Date | null; now: Date }>;
  /** The compare-and-set advance with its jobs (insert-if-absent by id), in one transaction. */
  fire(firing: SlotFiring): Promise<FiringOutcome>;
  now(): Promise<Date>;
}

/** Headers every scheduled job carries. */
export const SCHEDULE_HEADER = 'AR-Schedule';
export const SCHEDULE_SLOT_HEADER = 'AR-Schedule-Slot';
