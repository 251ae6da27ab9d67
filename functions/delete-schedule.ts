import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { failureAnswer } from '../shared/http/failure';
import { guarded } from '../shared/http/guard';
import { problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { rejectionAnswer } from '../shared/http/schedule-answers';

/** DELETE /api/schedules/{name} — no further slot fires; jobs already published stay on their queue. */
export async function deleteSchedule(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const name = request.params.name!;
  try {
    return (await rt.track(rt.engine.schedules.delete(name))) ? { status: 204 } : problem(404, `no schedule '${name}'`);
  } catch (err) {
    return rejectionAnswer(err) ?? failureAnswer(err, context, `deleting schedule '${name}'`);
  }
}

app.http('delete-schedule', { methods: ['DELETE'], authLevel: 'function', route: 'schedules/{name}', handler: guarded('deleting a schedule', deleteSchedule) });
