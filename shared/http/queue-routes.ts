import { DEFAULT_FLOWS_QUEUE } from '../flows/jobs';
import { CALLBACK_QUEUE, RESPONSE_QUEUE } from '../queue-names';
import { problem, type HttpAnswer } from './problem';

/** What the routes check against: the configured worker queues (AppConfig has them). */
type Configured = { queues: readonly string[] };

/** Every queue the configuration knows: the worker queues, the response ingress queue, then (internal) callbacks and flows. */
export function knownQueues(config: Configured, options: { internal?: boolean } = {}): string[] {
  return [...config.queues, RESPONSE_QUEUE, ...(options.internal ? [CALLBACK_QUEUE, DEFAULT_FLOWS_QUEUE] : [])];
}

/** How many distinct queue names a listing reads at most (the queue list, GET /api/queues/{queue}). */
export const MAX_LISTED_QUEUES = 1000;

/**
 * Queues that hold rows but no route here (issue 27): an outbox insert or an older release's queue that QUEUES does
 * not name. Read-only: nothing drains them until QUEUES names them. Not the dead-letter queue (its rows are listed
 * under their source queues) nor topic subscription queues (listed under their topic).
 */
export async function unroutedQueues(
  config: Configured & { deadLetterQueue: string },
  store: { queueNames(max: number): Promise<string[]> },
  routed: (queue: string) => boolean,
): Promise<string[]> {
  const known = new Set(knownQueues(config, { internal: true }));
  return (await store.queueNames(MAX_LISTED_QUEUES)).filter((q) => !known.has(q) && q !== config.deadLetterQueue && !routed(q));
}

/**
 * A route's {queue} must be a configured worker queue or the response ingress queue, so a typo never creates
 * a black hole. (The internal callbacks queue is not published to over HTTP.)
 */
export function unknownQueue(config: Configured, queue: string | undefined, options: { internal?: boolean } = {}): HttpAnswer | null {
  const known = knownQueues(config, options);
  if (queue !== undefined && known.includes(queue)) return null;
  const shown = queue === undefined ? '' : queue.length > 100 ? `${queue.slice(0, 100)}…` : queue;
  return problem(404, `queue '${shown}' is not configured; the queues are ${known.join(', ')} (QUEUES = ${config.queues.join(',')}, plus the built-in '${RESPONSE_QUEUE}' ingress queue${options.internal ? ` and the internal '${CALLBACK_QUEUE}' and '${DEFAULT_FLOWS_QUEUE}' queues` : ''})`);
}
