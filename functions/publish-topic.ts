import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import type { PublishInput, TopicPublishResult } from '../shared/engine/create-engine';
import { guarded } from '../shared/http/guard';
import { readJsonBody } from '../shared/http/body';
import { failureAnswer } from '../shared/http/failure';
import { json, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { carrierOf } from '../shared/tracing/publish-trace';
import { requestTraceContext } from '../shared/tracing/request-trace';
import { isPublishPayloadPath, parsePublishBody } from '../shared/transport/publish-request';
import { unknownTopic } from '../shared/http/topic-routes';

const PUBLISH_BUDGET_MS = 10_000;

/** POST /api/topics/{topic}/messages — one message or an array of ≤ 100, one copy per subscription; idempotent by id. */
export async function publishTopic(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const topic = request.params.topic;
  const notFound = unknownTopic(rt.config, topic);
  if (notFound) return notFound;
  const body = await readJsonBody(request.headers.get('content-type'), request.headers.get('content-length'), () => request.text(), undefined, isPublishPayloadPath);
  if (!body.ok) return body.answer;
  // the queue publish's rules and answers (the engine validates the same way again before writing)
  const parsed = parsePublishBody(body.value, topic!, rt.config.maxMessageBytes, rt.publisher.newId, { dedup: false });
  if (!parsed.ok) return problem(parsed.status, parsed.detail, parsed.errors);
  try {
    const o = { deadline: Date.now() + PUBLISH_BUDGET_MS, logger: context, ...carrierOf(requestTraceContext(context, request.headers)) };
    const results = parsed.batch
      ? await rt.track(rt.engine.publishBatchToTopic(topic!, body.value as PublishInput[], o))
      : [await rt.track(rt.engine.publishToTopic(topic!, body.value as PublishInput, o))];
    const items = results.map(answerOf);
    const status = results.some((r) => !r.duplicate) ? 201 : 200;
    return json(status, parsed.batch ? { items } : items[0]);
  } catch (err) {
    return failureAnswer(err, context, `publishing to topic '${topic}'`);
  }
}

function answerOf(r: TopicPublishResult) {
  return { id: r.id, topic: r.topic, subscriptions: r.subscriptions, ...(r.duplicate ? { duplicate: true } : {}) };
}

app.http('publish-topic', {
  methods: ['POST'],
  authLevel: 'function',
  route: 'topics/{topic}/messages',
  handler: guarded('publishing to a topic', publishTopic),
});
