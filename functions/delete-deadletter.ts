import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { problem, malformedId } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/http/queue-routes';

/** DELETE /api/queues/{queue}/deadletters/{id} */
export async function deleteDeadLetter(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { queue, id } = request.params;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  if (notFound) return notFound;
  const malformed = malformedId('id', id);
  if (malformed) return malformed;
  try {
    const deleted = await rt.track(rt.store.deleteDeadLetter(rt.config.deadLetterQueue, queue!, id!.toLowerCase()));
    return deleted ? { status: 204 } : problem(404, `no dead letter '${id}' from queue '${queue}'`);
  } catch (err) {
    return failureAnswer(err, context, 'deleting a dead letter');
  }
}

app.http('delete-deadletter', {
  methods: ['DELETE'],
  authLevel: 'function',
  route: 'queues/{queue}/deadletters/{id}',
  handler: guarded('deleting a dead letter', deleteDeadLetter),
});
