import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { ResponseIdConflictError } from '../shared/channel/response-channel';
import { isResponsePayloadPath, parseResponseBody } from '../shared/channel/response-request';
import { readJsonBody } from '../shared/http/body';
import { failureAnswer } from '../shared/http/failure';
import { json, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { carrierOf } from '../shared/tracing/publish-trace';
import { requestTraceContext } from '../shared/tracing/request-trace';

/** POST /api/responses — publish a response: 202 { id, delivery: live | stored | recovery }. */
export async function postResponse(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const body = await readJsonBody(request.headers.get('content-type'), request.headers.get('content-length'), () => request.text(), undefined, isResponsePayloadPath);
  if (!body.ok) return body.answer;
  const parsed = parseResponseBody(body.value, rt.config.maxMessageBytes);
  if (!parsed.ok) return problem(400, 'the response has invalid fields; nothing was published', parsed.errors);
  try {
    // the poster's trace (e.g. a forward target answering under the traceparent it was sent): docs/tracing.md
    const input = { ...parsed.value, ...carrierOf(requestTraceContext(context, request.headers)) };
    const result = await rt.track(rt.channel.publishResponse(input, { confirm: true, signal: rt.stopping, logger: context }));
    if (!result.duplicate) rt.metrics.responsePublished(result.delivery, 'http');
    return json(202, { id: result.id, delivery: result.delivery, ...(result.duplicate ? { duplicate: true } : {}) });
  } catch (err) {
    if (err instanceof ResponseIdConflictError) return problem(409, err.message);
    return failureAnswer(err, context, 'publishing a response');
  }
}

app.http('post-response', { methods: ['POST'], authLevel: 'function', route: 'responses', handler: guarded('publishing a response', postResponse) });
