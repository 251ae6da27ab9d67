import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/http/queue-routes';

/** GET /api/queues/{queue} — depth by state, the age of the oldest ready job, and the queue's route and policy. */
export async function getQueue(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const notFound = unknownQueue(rt.config, request.params.queue, { internal: true });
  if (notFound) return notFound;
  try {
    return json(200, await rt.engine.stats(request.params.queue!));
  } catch (err) {
    return failureAnswer(err, context, 'reading queue statistics');
  }
}

app.http('get-queue', { methods: ['GET'], authLevel: 'function', route: 'queues/{queue}', handler: guarded('reading queue statistics', getQueue) });
