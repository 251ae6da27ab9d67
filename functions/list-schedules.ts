import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { failureAnswer } from '../shared/http/failure';
import { guarded } from '../shared/http/guard';
import { jsonWithPayloads } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { scheduleView } from '../shared/schedules/view';

/** GET /api/schedules — every schedule (by name, at most 1,000) with its last and next run. */
export async function listSchedules(_request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  try {
    const rows = await rt.track(rt.engine.schedules.list());
    return jsonWithPayloads(200, { items: rows.map(scheduleView) });
  } catch (err) {
    return failureAnswer(err, context, 'listing schedules');
  }
}

app.http('list-schedules', { methods: ['GET'], authLevel: 'function', route: 'schedules', handler: guarded('listing schedules', listSchedules) });
