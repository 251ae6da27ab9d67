import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { failureAnswer } from '../shared/http/failure';
import { json, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/transport/queue-routes';

/** GET /api/queues/{queue}/deadletters?top=50 — newest first. */
export async function listDeadLetters(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const queue = request.params.queue;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  if (notFound) return notFound;
  const rawTop = request.query.get('top') ?? '50';
  const top = Number(rawTop);
  if (!Number.isInteger(top) || top < 1 || top > 1000) {
    return problem(400, 'top must be an integer from 1 to 1000', [{ field: 'top', message: `got '${rawTop}'` }]);
  }
  try {
    const items = await rt.store.listDeadLetters(rt.config.deadLetterQueue, queue!, top);
    return json(200, {
      items: items.map((d) => ({
        id: d.id,
        sourceQueue: d.sourceQueue,
        reason: d.reason,
        payload: parseOrRaw(d.payloadJson),
        headers: d.headers,
        createdAt: d.createdAt.toISOString(),
      })),
    });
  } catch (err) {
    return failureAnswer(err, context, 'listing dead letters');
  }
}

function parseOrRaw(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

app.http('list-deadletters', { methods: ['GET'], authLevel: 'function', route: 'queues/{queue}/deadletters', handler: listDeadLetters });
