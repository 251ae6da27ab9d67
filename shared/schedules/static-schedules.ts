// Static schedules (the SCHEDULES app setting, read by shared/settings/schedules.ts) applied at start-up: an
// idempotent upsert (a schedule whose definition is unchanged keeps its next slot; one whose cron or zone changed
// starts from the next slot after now).

import type { Logger } from '../log';
import type { ScheduleService } from './service';

export interface StaticSchedule {
  name: string;
  input: unknown;
}

/** Upserts each; an invalid one is logged as an error (with its fields) and the others still apply. */
export async function applyStaticSchedules(service: ScheduleService, schedules: readonly StaticSchedule[], logger: Logger): Promise<number> {
  let applied = 0;
  for (const s of schedules) {
    try {
      await service.put(s.name, s.input);
      applied++;
    } catch (err) {
      logger.error(`SCHEDULES: schedule '${s.name}' was not applied: ${(err as Error).message}`);
    }
  }
  return applied;
}
