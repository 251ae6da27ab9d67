// The process's drain-request sender on the configured storage queue (queue mode only; loaded lazily so timer
// mode never loads the Storage SDK).
import type { AppConfig, Env } from '../config';
import type { Logger } from '../log';
import { DrainRequestSender } from './sender';

export async function openDrainRequests(config: AppConfig, env: Env, logger: Logger): Promise<DrainRequestSender | undefined> {
  const c = config.drainRequests;
  if (c.trigger !== 'queue') return undefined;
  const { queueServiceClient, storageRequestQueue } = await import('./storage-queue');
  const service = await queueServiceClient(env, c.connection);
  return new DrainRequestSender(storageRequestQueue(service.getQueueClient(c.queueName)), {
    coalesceMs: c.idleGraceMs,
    fanOut: c.fanOut,
    maxPending: c.maxPending,
    logger,
  });
}
