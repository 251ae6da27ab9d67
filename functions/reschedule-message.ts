import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { readJsonBody } from '../shared/http/body';
import { failureAnswer } from '../shared/http/failure';
import { json, malformedId, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/http/queue-routes';
import { parseRescheduleBody } from '../shared/transport/reschedule-request';

/** POST /api/queues/{queue}/messages/{id}/reschedule — `{ delaySeconds }` or `{ availableAt }`; waiting jobs only. */
export async function rescheduleMessage(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { queue, id } = request.params;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  if (notFound) return notFound;
  const malformed = malformedId('id', id);
  if (malformed) return malformed;
  const body = await readJsonBody(request.headers.get('content-type'), request.headers.get('content-length'), () => request.text());
  if (!body.ok) return body.answer;
  const parsed = parseRescheduleBody(body.value);
  if (!parsed.ok) return problem(400, parsed.detail, parsed.errors);
  try {
    const result = await rt.track(rt.engine.reschedule(queue!, id!, parsed.when));
    const jobId = id!.toLowerCase();
    if (result.outcome === 'rescheduled') return json(200, { id: jobId, queue, availableAt: result.availableAt.toISOString() });
    if (result.outcome === 'running') return problem(409, `job ${jobId} on queue '${queue}' is running; only a waiting job can be rescheduled`);
    return problem(404, `no waiting job '${jobId}' on queue '${queue}'`);
  } catch (err) {
    return failureAnswer(err, context, 'rescheduling a job');
  }
}

app.http('reschedule-message', {
  methods: ['POST'],
  authLevel: 'function',
  route: 'queues/{queue}/messages/{id}/reschedule',
  handler: guarded('rescheduling a job', rescheduleMessage),
});
