import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { failureAnswer } from '../shared/http/failure';
import { guarded } from '../shared/http/guard';
import { jsonWithPayloads, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { rejectionAnswer } from '../shared/http/schedule-answers';
import { scheduleView } from '../shared/schedules/view';

/**
 * POST /api/schedules/{name}/pause (and /resume, resume-schedule.ts) — a paused schedule fires nothing; resuming
 * starts from the next slot after now (slots passed while paused do not run, whatever the misfire policy).
 */
export function setSchedulePaused(paused: boolean) {
  const what = paused ? 'pausing' : 'resuming';
  return async (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> => {
    const rt = await getRuntime();
    const name = request.params.name!;
    try {
      const s = rt.engine.schedules;
      const row = await rt.track(paused ? s.pause(name) : s.resume(name));
      return row ? jsonWithPayloads(200, scheduleView(row)) : problem(404, `no schedule '${name}'`);
    } catch (err) {
      return rejectionAnswer(err) ?? failureAnswer(err, context, `${what} schedule '${name}'`);
    }
  };
}

export const pauseSchedule = setSchedulePaused(true);

app.http('pause-schedule', { methods: ['POST'], authLevel: 'function', route: 'schedules/{name}/pause', handler: guarded('pausing a schedule', pauseSchedule) });
