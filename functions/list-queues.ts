import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { knownQueues, unroutedQueues } from '../shared/http/queue-routes';
import type { QueueStats } from '../shared/transport/types';

/** What the list adds to a queue's counts: its pause, a forward backoff, and its limits across instances. */
interface QueueListExtras {
  paused: boolean;
  backoffUntil: Date | null;
  concurrencyLimit: number | null;
  rateLimitPerSecond: number | null;
  /** false: the queue holds rows but has no route here (not in QUEUES); nothing drains it. */
  routed?: false;
}

/**
 * GET /api/queues — the statistics of every queue the configuration knows (the routes' own list), in that order,
 * then the queues that hold rows but have no route (`routed: false`, read-only: an outbox insert on a queue QUEUES
 * does not name would otherwise be invisible).
 */
export async function listQueues(_request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  try {
    const items: Array<QueueStats & QueueListExtras> = [];
    // one after another: a page refresh must not take a pool connection per queue
    for (const queue of knownQueues(rt.config, { internal: true })) {
      const stats = await rt.store.queueStats(queue, rt.config.deadLetterQueue);
      const state = await rt.store.queueState(queue);
      const policy = rt.engine.route(queue)?.policy;
      items.push({
        ...stats,
        paused: state.paused,
        backoffUntil: state.backoffUntil ?? null,
        concurrencyLimit: policy?.concurrencyLimit ?? null,
        rateLimitPerSecond: policy?.rateLimitPerSecond ?? null,
      });
    }
    for (const queue of await unroutedQueues(rt.config, rt.store, (q) => rt.engine.route(q) !== undefined)) {
      const stats = await rt.store.queueStats(queue, rt.config.deadLetterQueue);
      const state = await rt.store.queueState(queue);
      items.push({ ...stats, paused: state.paused, backoffUntil: state.backoffUntil ?? null, concurrencyLimit: null, rateLimitPerSecond: null, routed: false });
    }
    return json(200, { items });
  } catch (err) {
    return failureAnswer(err, context, 'reading queue statistics');
  }
}

app.http('list-queues', { methods: ['GET'], authLevel: 'function', route: 'queues', handler: guarded('reading queue statistics', listQueues) });
