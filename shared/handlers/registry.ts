import type { AppConfig } from '../config';
import type { JobHandler } from '../transport/job';
import { echoHandler } from './echo';
import { forwardingHandler } from './forwarder';

/** Which handler runs each configured worker queue. */
export function buildHandlers(config: AppConfig): Map<string, JobHandler> {
  const worker =
    config.workerHandler === 'forward' && config.workerForwardUrl
      ? forwardingHandler(config.workerForwardUrl, config.workerForwardTimeoutMs)
      : echoHandler;
  return new Map(config.queues.map((q) => [q, worker]));
}
