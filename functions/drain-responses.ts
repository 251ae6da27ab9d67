import { app, type InvocationContext, type Timer } from '@azure/functions';
import { RESPONSE_QUEUE } from '../shared/queue-names';
import { drainQueues } from '../shared/drain-queues';
import { appConfig, getRuntime } from '../shared/runtime';
import type { DrainReport } from '../shared/transport/drain-loop';

/** Timer: response ingress — raw responses on the `response` queue are published to the channel. */
export async function drainResponses(_timer: Timer, context: InvocationContext): Promise<DrainReport[]> {
  return drainQueues(await getRuntime(), [RESPONSE_QUEUE], context);
}

app.timer('drain-responses', { schedule: appConfig().channel.drainResponsesSchedule, handler: drainResponses });
