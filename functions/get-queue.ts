import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue, unroutedQueues } from '../shared/http/queue-routes';

/** GET /api/queues/{queue} — depth by state, the age of the oldest ready job, and the queue's route and policy. */
export async function getQueue(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const queue = request.params.queue!;
  const notFound = unknownQueue(rt.config, queue, { internal: true });
  try {
    if (notFound) {
      // a queue that holds rows but no route (an outbox insert on a queue QUEUES does not name): read-only counts
      if (!(await unroutedQueues(rt.config, rt.store, (q) => rt.engine.route(q) !== undefined)).includes(queue)) return notFound;
      const stats = await rt.store.queueStats(queue, rt.config.deadLetterQueue);
      const state = await rt.store.queueState(queue);
      return json(200, { ...stats, paused: state.paused, pausedAt: state.pausedAt ?? null, backoffUntil: state.backoffUntil ?? null, route: { handler: 'none' }, policy: null });
    }
    return json(200, await rt.engine.stats(request.params.queue!));
  } catch (err) {
    return failureAnswer(err, context, 'reading queue statistics');
  }
}

app.http('get-queue', { methods: ['GET'], authLevel: 'function', route: 'queues/{queue}', handler: guarded('reading queue statistics', getQueue) });
