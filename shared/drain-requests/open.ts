// The process's drain-request sender on the configured storage queue (queue mode only; loaded lazily so timer
// mode never loads the Storage SDK).
import type { Env } from '../env';
import type { Logger } from '../log';
import type { DrainRequestConfig } from './options';
import { DrainRequestSender } from './sender';

export async function openDrainRequests(c: DrainRequestConfig, env: Env, logger: Logger): Promise<DrainRequestSender | undefined> {
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
