import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json, malformedId, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/http/queue-routes';

/**
 * DELETE /api/queues/{queue}/messages/{id}[?running=true] — cancels a job. A waiting (ready or delayed) job is
 * deleted: 204. A running one is a 409 unless `running=true`: then it is marked and its handler aborted at the
 * next lease renewal: 202. 404 when the queue holds no such job.
 */
export async function cancelMessage(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { queue, id } = request.params;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  if (notFound) return notFound;
  const malformed = malformedId('id', id);
  if (malformed) return malformed;
  const flag = request.query.get('running');
  if (flag !== null && flag !== 'true' && flag !== 'false') {
    return problem(400, `running must be true or false; got '${flag.slice(0, 40)}'`, [{ field: 'running', message: 'must be true or false' }]);
  }
  const running = flag === 'true';
  try {
    const outcome = await rt.track(rt.engine.cancel(queue!, id!, { running }));
    const jobId = id!.toLowerCase();
    if (outcome === 'deleted') return { status: 204 };
    if (outcome === 'cancelling') return json(202, { id: jobId, queue, state: 'cancelling' });
    if (outcome === 'running') {
      return problem(409, `job ${jobId} on queue '${queue}' is running; add ?running=true to cancel it while it runs (its handler is aborted at its next lease renewal)`);
    }
    return problem(404, `no waiting or running job '${jobId}' on queue '${queue}'`);
  } catch (err) {
    return failureAnswer(err, context, 'cancelling a job');
  }
}

app.http('cancel-message', {
  methods: ['DELETE'],
  authLevel: 'function',
  route: 'queues/{queue}/messages/{id}',
  handler: guarded('cancelling a job', cancelMessage),
});
