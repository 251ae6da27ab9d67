// Which slots an evaluation fires: every slot from the row's next slot up to now is due; the misfire policy decides
// which of them run. A slot is on time while it is at most MISFIRE_GRACE_MS old (an evaluation is late by the
// drain request's or the timer's delay, never by design); older ones are missed.

import type { CronSpec } from './cron';
import type { MisfirePolicy } from './types';

/** How late a slot may be evaluated and still count as on time. */
export const MISFIRE_GRACE_MS = 60_000;
export const MAX_CATCH_UP = 1000;
/** An on-time slot list longer than this (a schedule every second, evaluated a minute late) is cut to the newest. */
const MAX_ON_TIME = 120;

export interface SlotPlan {
  /** Slots to fire, oldest first. */
  fire: Date[];
  /** The newest due slot (the new last slot), or null when none is due. */
  newest: Date | null;
  /** The first slot after now (the new next slot). */
  next: Date | null;
}

export function planSlots(spec: CronSpec, nextSlot: Date, now: Date, misfire: MisfirePolicy): SlotPlan {
  const next = spec.next(now);
  if (nextSlot.getTime() > now.getTime()) return { fire: [], newest: null, next: nextSlot };
  const catchUp = misfire.policy === 'catchUp' ? Math.min(Math.max(misfire.max, 0), MAX_CATCH_UP) : 0;
  // newest first, never before the row's next slot (slots before it were fired or skipped already)
  const due = spec.previous(MAX_ON_TIME + catchUp, now).filter((s) => s.getTime() >= nextSlot.getTime());
  const onTime = due.filter((s) => now.getTime() - s.getTime() <= MISFIRE_GRACE_MS);
  const missed = due.slice(onTime.length, onTime.length + catchUp);
  return { fire: [...onTime, ...missed].reverse(), newest: due[0] ?? null, next };
}
