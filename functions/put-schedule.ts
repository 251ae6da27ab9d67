import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { readJsonBody } from '../shared/http/body';
import { failureAnswer } from '../shared/http/failure';
import { guarded } from '../shared/http/guard';
import { jsonWithPayloads } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { isSchedulePayloadPath, rejectionAnswer } from '../shared/http/schedule-answers';
import { scheduleView } from '../shared/schedules/view';

/** PUT /api/schedules/{name} — creates (201) or replaces (200) a recurring schedule; the payload is kept as sent. */
export async function putSchedule(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const body = await readJsonBody(request.headers.get('content-type'), request.headers.get('content-length'), () => request.text(), undefined, isSchedulePayloadPath);
  if (!body.ok) return body.answer;
  try {
    const { schedule, created } = await rt.track(rt.engine.schedules.put(request.params.name!, body.value));
    return jsonWithPayloads(created ? 201 : 200, scheduleView(schedule));
  } catch (err) {
    return rejectionAnswer(err) ?? failureAnswer(err, context, `writing schedule '${request.params.name}'`);
  }
}

app.http('put-schedule', { methods: ['PUT'], authLevel: 'function', route: 'schedules/{name}', handler: guarded('writing a schedule', putSchedule) });
