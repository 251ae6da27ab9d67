import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { failureAnswer } from '../shared/http/failure';
import { guarded } from '../shared/http/guard';
import { jsonWithPayloads, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { rejectionAnswer } from '../shared/http/schedule-answers';
import { scheduleView } from '../shared/schedules/view';

/** GET /api/schedules/{name} — the schedule with its last and next run. */
export async function getSchedule(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const name = request.params.name!;
  try {
    const row = await rt.track(rt.engine.schedules.get(name));
    return row ? jsonWithPayloads(200, scheduleView(row)) : problem(404, `no schedule '${name}'`);
  } catch (err) {
    return rejectionAnswer(err) ?? failureAnswer(err, context, `reading schedule '${name}'`);
  }
}

app.http('get-schedule', { methods: ['GET'], authLevel: 'function', route: 'schedules/{name}', handler: guarded('reading a schedule', getSchedule) });
