import type { ScheduleService } from './service';

/** The schedules of an engine whose stores have no schedules table (a test double): every call says so. */
export function unavailableSchedules(): ScheduleService {
  const refuse = () => Promise.reject(new Error('these stores have no schedules table (Stores.schedules), so schedules are off'));
  return {
    put: refuse,
    get: refuse,
    list: refuse,
    delete: refuse,
    pause: refuse,
    resume: refuse,
    // the timers call these whatever the stores: nothing to evaluate
    evaluateDue: () => Promise.resolve({ due: 0, advanced: 0, jobs: 0 }),
    announceSoonest: () => Promise.resolve(),
  };
}
