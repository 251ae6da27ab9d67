import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { jsonWithPayloads, problem } from '../shared/http/problem';
import { queryChoice, queryNumber } from '../shared/http/query';
import { unknownQueue } from '../shared/http/queue-routes';
import { RawJson } from '../shared/json/raw-json';
import { getRuntime } from '../shared/runtime';
import { getHeader } from '../shared/transport/headers';
import { CORRELATION_ID_HEADER } from '../shared/transport/types';
import { MAX_WAITING_TOP, WAITING_ORDERS, WAITING_STATES } from '../shared/transport/waiting';

/**
 * GET /api/queues/{queue}/messages?state=ready|delayed&order=oldest|newest&top=20 — a queue's waiting (unleased)
 * jobs, first page: ready (available now) or delayed, oldest first (the order claims take: higher priority first, then
 * availability) or newest first (its reverse).
 */
export async function listWaiting(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const queue = request.params.queue;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  if (notFound) return notFound;
  const state = queryChoice(request, 'state', WAITING_STATES, 'ready');
  const order = queryChoice(request, 'order', WAITING_ORDERS, 'oldest');
  const top = queryNumber(request, 'top', { fallback: 20, min: 1, max: MAX_WAITING_TOP, integer: true });
  if (!state.ok || !order.ok || !top.ok) {
    const refused = [state, order, top].flatMap((p) => (p.ok ? [] : [p]));
    return problem(400, refused.map((p) => p.detail).join('; '), refused.flatMap((p) => p.errors));
  }
  try {
    const items = await rt.store.listWaiting({ queue: queue!, state: state.value, order: order.value, top: top.value });
    return jsonWithPayloads(200, {
      queue,
      state: state.value,
      order: order.value,
      items: items.map((m) => {
        const correlationId = getHeader(m.headers, CORRELATION_ID_HEADER);
        return {
          id: m.id,
          availableAt: m.availableAt.toISOString(),
          createdAt: m.createdAt.toISOString(),
          attempts: m.attempts,
          priority: m.priority,
          ...(correlationId === undefined ? {} : { correlationId }),
          ...(m.orderingKey === undefined ? {} : { orderingKey: m.orderingKey }),
          headers: m.headers,
          payload: parseOrRaw(m.payloadJson),
        };
      }),
    });
  } catch (err) {
    return failureAnswer(err, context, 'listing waiting jobs');
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

app.http('list-waiting', { methods: ['GET'], authLevel: 'function', route: 'queues/{queue}/messages', handler: guarded('listing waiting jobs', listWaiting) });
