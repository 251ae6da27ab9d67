import { CALLBACK_QUEUE, RESPONSE_QUEUE, type AppConfig } from '../config';
import { problem, type HttpAnswer } from '../http/problem';

/**
 * A route's {queue} must be a configured worker queue or the response ingress queue, so a typo never creates
 * a black hole. (The internal callbacks queue is not published to over HTTP.)
 */
export function unknownQueue(config: AppConfig, queue: string | undefined, options: { internal?: boolean } = {}): HttpAnswer | null {
  const known = [...config.queues, RESPONSE_QUEUE, ...(options.internal ? [CALLBACK_QUEUE] : [])];
  if (queue !== undefined && known.includes(queue)) return null;
  return problem(404, `queue '${queue ?? ''}' is not configured; queues: ${known.join(', ')} (setting QUEUES)`);
}
