import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { correlationIdProblem } from '../shared/correlation-id';
import { linkedSignal } from '../shared/engine/signals';
import { clientGoneSignal } from '../shared/http/client-gone';
import { failureAnswer } from '../shared/http/failure';
import { jsonWithPayloads, problem } from '../shared/http/problem';
import { queryNumber } from '../shared/http/query';
import { RawJson } from '../shared/json/raw-json';
import { getRuntime } from '../shared/runtime';

/** GET /api/responses?correlationId=…&waitSeconds=0..MAX — long-poll for the next response: 200, or 204. */
export async function getResponse(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const correlationId = request.query.get('correlationId');
  const why = correlationIdProblem(correlationId ?? undefined);
  if (why) return problem(400, `correlationId ${why}`, [{ field: 'correlationId', message: why }]);
  // above MAX_WAIT_SECONDS the wait is capped (kept below Azure's 230 s HTTP limit), not refused
  const waitSeconds = queryNumber(request, 'waitSeconds', { fallback: 0, min: 0, max: rt.config.channel.maxWaitSeconds, clamp: true });
  if (!waitSeconds.ok) return problem(400, waitSeconds.detail, waitSeconds.errors);
  const wait = waitSeconds.value;
  // stops at shutdown, and when the client went away (where the host can tell): its response then stays stored
  const stop = linkedSignal([rt.stopping, clientGoneSignal(request)]);
  try {
    const response = await rt.track(rt.channel.waitForResponse(correlationId!, wait * 1000, stop.signal, context));
    if (!response) return { status: 204 };
    // the payload as it was published, spliced in as text (never re-serialised from the parsed value)
    return jsonWithPayloads(200, {
      correlationId: response.correlationId,
      id: response.id,
      payload: new RawJson(response.payloadJson),
      final: response.final,
      ...(response.error !== undefined ? { error: response.error } : {}),
      createdAt: response.createdAt.toISOString(),
    });
  } catch (err) {
    return failureAnswer(err, context, 'waiting for a response');
  } finally {
    stop.dispose();
  }
}

app.http('get-response', { methods: ['GET'], authLevel: 'function', route: 'responses', handler: guarded('waiting for a response', getResponse) });
