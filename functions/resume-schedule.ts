import { app } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { setSchedulePaused } from './pause-schedule';

/** POST /api/schedules/{name}/resume — see pause-schedule.ts. */
export const resumeSchedule = setSchedulePaused(false);

app.http('resume-schedule', { methods: ['POST'], authLevel: 'function', route: 'schedules/{name}/resume', handler: guarded('resuming a schedule', resumeSchedule) });
