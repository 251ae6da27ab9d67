import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { readJsonBody } from '../shared/http/body';
import { failureAnswer } from '../shared/http/failure';
import { json, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { publishTraced } from '../shared/tracing/publish-trace';
import { requestTraceContext } from '../shared/tracing/request-trace';
import { isPublishPayloadPath, parsePublishBody } from '../shared/transport/publish-request';
import { unknownQueue } from '../shared/http/queue-routes';

const PUBLISH_BUDGET_MS = 10_000;

/** POST /api/queues/{queue}/messages — one message or an array of ≤ 100; idempotent by id, and by dedup key within its window. */
export async function publishMessage(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const queue = request.params.queue;
  const notFound = unknownQueue(rt.config, queue);
  if (notFound) return notFound;
  const body = await readJsonBody(request.headers.get('content-type'), request.headers.get('content-length'), () => request.text(), undefined, isPublishPayloadPath);
  if (!body.ok) return body.answer;
  const parsed = parsePublishBody(body.value, queue!, rt.config.maxMessageBytes, rt.publisher.newId);
  if (!parsed.ok) return problem(parsed.status, parsed.detail, parsed.errors);
  try {
    // Retries stop in time for a prompt 503 instead of waiting out every throttling backoff.
    const deadline = Date.now() + PUBLISH_BUDGET_MS;
    const trace = requestTraceContext(context, request.headers);
    const outcomes = await publishTraced(queue!, trace, parsed.messages, () => rt.track(rt.publisher.publish(parsed.messages, deadline, undefined, context)));
    // Ids are unique across queues: a duplicate names the queue its job is really on.
    const items = outcomes.map((o) => ({
      id: o.id,
      queue: o.existingQueue ?? queue!,
      availableAt: o.availableAt?.toISOString() ?? null,
      ...(o.inserted ? {} : { duplicate: true }),
      ...(o.debounced ? { debounced: true } : {}),
    }));
    const elsewhere = outcomes.find((o) => o.existingQueue !== undefined && o.existingQueue !== queue);
    if (!parsed.batch && elsewhere) {
      return problem(409, `a job with id ${elsewhere.id} is already on queue '${elsewhere.existingQueue}' (ids are unique across queues); nothing was published`);
    }
    const inserted = outcomes.filter((o) => o.inserted).length;
    rt.metrics.jobsPublished(queue!, inserted);
    const anyInserted = inserted > 0;
    return json(anyInserted ? 201 : 200, parsed.batch ? { items } : items[0]);
  } catch (err) {
    return failureAnswer(err, context, `publishing to '${queue}'`);
  }
}

app.http('publish-message', {
  methods: ['POST'],
  authLevel: 'function',
  route: 'queues/{queue}/messages',
  handler: guarded('publishing', publishMessage),
});
