import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json, problem, malformedId } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/http/queue-routes';

/** POST /api/queues/{queue}/deadletters/{id}/requeue — back on its source queue with attempts reset. */
export async function requeueDeadLetter(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { queue, id } = request.params;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  if (notFound) return notFound;
  const malformed = malformedId('id', id);
  if (malformed) return malformed;
  try {
    const moved = await rt.track(rt.store.requeueDeadLetter(rt.config.deadLetterQueue, queue!, id!.toLowerCase()));
    if (!moved) return problem(404, `no dead letter '${id}' from queue '${queue}'`);
    rt.wake.notify(queue!);
    return json(200, { id: id!.toLowerCase() });
  } catch (err) {
    return failureAnswer(err, context, 'requeueing a dead letter');
  }
}

app.http('requeue-deadletter', {
  methods: ['POST'],
  authLevel: 'function',
  route: 'queues/{queue}/deadletters/{id}/requeue',
  handler: guarded('requeueing a dead letter', requeueDeadLetter),
});
