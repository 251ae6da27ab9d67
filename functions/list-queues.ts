import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { knownQueues } from '../shared/http/queue-routes';
import type { QueueStats } from '../shared/transport/types';

/** GET /api/queues — the statistics of every queue the configuration knows (the routes' own list), in that order. */
export async function listQueues(_request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  try {
    const items: Array<QueueStats & { paused: boolean }> = [];
    // one after another: a page refresh must not take a pool connection per queue
    for (const queue of knownQueues(rt.config, { internal: true })) {
      const stats = await rt.store.queueStats(queue, rt.config.deadLetterQueue);
      items.push({ ...stats, paused: (await rt.store.queueState(queue)).paused });
    }
    return json(200, { items });
  } catch (err) {
    return failureAnswer(err, context, 'reading queue statistics');
  }
}

app.http('list-queues', { methods: ['GET'], authLevel: 'function', route: 'queues', handler: guarded('reading queue statistics', listQueues) });
