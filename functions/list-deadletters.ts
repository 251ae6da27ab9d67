import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { jsonWithPayloads, problem } from '../shared/http/problem';
import { queryNumber } from '../shared/http/query';
import { RawJson } from '../shared/json/raw-json';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/http/queue-routes';

/** GET /api/queues/{queue}/deadletters?top=50 — newest first. */
export async function listDeadLetters(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const queue = request.params.queue;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  if (notFound) return notFound;
  const parsedTop = queryNumber(request, 'top', { fallback: 50, min: 1, max: 1000, integer: true });
  if (!parsedTop.ok) return problem(400, parsedTop.detail, parsedTop.errors);
  const top = parsedTop.value;
  try {
    const items = await rt.store.listDeadLetters(rt.config.deadLetterQueue, queue!, top);
    return jsonWithPayloads(200, {
      items: items.map((d) => ({
        id: d.id,
        sourceQueue: d.sourceQueue,
        reason: d.reason,
        payload: parseOrRaw(d.payloadJson),
        headers: d.headers,
        attempts: d.attempts,
        createdAt: d.createdAt.toISOString(),
      })),
    });
  } catch (err) {
    return failureAnswer(err, context, 'listing dead letters');
  }
}

/** The stored payload as it was sent; a payload_json that is not JSON (written straight into the table) as a string. */
function parseOrRaw(s: string): unknown {
  try {
    return RawJson.parse(s);
  } catch {
    return s;
  }
}

app.http('list-deadletters', { methods: ['GET'], authLevel: 'function', route: 'queues/{queue}/deadletters', handler: guarded('listing dead letters', listDeadLetters) });
