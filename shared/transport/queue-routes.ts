import type { AppConfig } from '../config';
import { problem, type HttpAnswer } from '../http/problem';

/** A route's {queue} must be a configured queue, so a typo never creates a black hole. */
export function unknownQueue(config: AppConfig, queue: string | undefined): HttpAnswer | null {
  if (queue !== undefined && config.queues.includes(queue)) return null;
  return problem(404, `queue '${queue ?? ''}' is not configured; configured queues: ${config.queues.join(', ')} (setting QUEUES)`);
}
