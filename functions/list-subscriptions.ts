import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownTopic } from '../shared/http/topic-routes';

/** GET /api/topics/{topic}/subscriptions — the topic's subscriptions (configured and recorded) with their queues' counts. */
export async function listSubscriptions(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const topic = request.params.topic;
  const notFound = unknownTopic(rt.config, topic);
  if (notFound) return notFound;
  try {
    return json(200, { topic, items: await rt.engine.subscriptions(topic!) });
  } catch (err) {
    return failureAnswer(err, context, `reading the subscriptions of topic '${topic}'`);
  }
}

/** GET /api/topics — every configured topic with its subscriptions' counts (the dashboard's topics section). */
export async function listTopics(_request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  try {
    const items = [];
    // one after another: a page refresh must not take a pool connection per topic
    for (const topic of Object.keys(rt.config.topics)) items.push({ topic, subscriptions: await rt.engine.subscriptions(topic) });
    return json(200, { items });
  } catch (err) {
    return failureAnswer(err, context, 'reading the topics');
  }
}

app.http('list-subscriptions', {
  methods: ['GET'],
  authLevel: 'function',
  route: 'topics/{topic}/subscriptions',
  handler: guarded('reading subscriptions', listSubscriptions),
});
app.http('list-topics', { methods: ['GET'], authLevel: 'function', route: 'topics', handler: guarded('reading topics', listTopics) });
