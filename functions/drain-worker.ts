import { app, type InvocationContext, type Timer } from '@azure/functions';
import { drainQueues } from '../shared/drain-queues';
import { appConfig, getRuntime } from '../shared/runtime';
import type { DrainReport } from '../shared/transport/drain-loop';

/** Timer: drains every worker queue for DRAIN_BUDGET_SECONDS, then ends with nothing left leased. */
export async function drainWorker(_timer: Timer, context: InvocationContext): Promise<DrainReport[]> {
  const rt = await getRuntime();
  return drainQueues(rt, rt.config.queues, context);
}

app.timer('drain-worker', { schedule: appConfig().drain.schedule, handler: drainWorker });
