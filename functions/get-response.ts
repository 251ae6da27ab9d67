import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { correlationIdProblem } from '../shared/correlation-id';
import { failureAnswer } from '../shared/http/failure';
import { json, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

/** GET /api/responses?correlationId=…&waitSeconds=0..MAX — long-poll for the next response: 200, or 204. */
export async function getResponse(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const correlationId = request.query.get('correlationId');
  const why = correlationIdProblem(correlationId ?? undefined);
  if (why) return problem(400, `correlationId ${why}`, [{ field: 'correlationId', message: why }]);
  const raw = request.query.get('waitSeconds') ?? '0';
  const wait = Number(raw);
  const max = rt.config.channel.maxWaitSeconds;
  if (!Number.isFinite(wait) || wait < 0 || wait > max) {
    return problem(400, `waitSeconds must be a number from 0 to ${max}`, [{ field: 'waitSeconds', message: `got '${raw}'` }]);
  }
  try {
    const response = await rt.track(rt.channel.waitForResponse(correlationId!, wait * 1000, rt.stopping));
    if (!response) return { status: 204 };
    return json(200, { ...response, createdAt: response.createdAt.toISOString() });
  } catch (err) {
    return failureAnswer(err, context, 'waiting for a response');
  }
}

app.http('get-response', { methods: ['GET'], authLevel: 'function', route: 'responses', handler: getResponse });
