import { app, type InvocationContext, type Timer } from '@azure/functions';
import { CALLBACK_QUEUE } from '../shared/queue-names';
import { drainQueues } from '../shared/drain-queues';
import { appConfig, getRuntime } from '../shared/runtime';
import type { DrainReport } from '../shared/transport/drain-loop';

/** Timer: sends routed responses to their callback registrations (signed POSTs, with retries and dead letters). */
export async function drainCallbacks(_timer: Timer, context: InvocationContext): Promise<DrainReport[]> {
  return drainQueues(await getRuntime(), [CALLBACK_QUEUE], context);
}

app.timer('drain-callbacks', { schedule: appConfig().channel.drainCallbacksSchedule, handler: drainCallbacks });
