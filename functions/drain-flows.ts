import { app, type InvocationContext, type Timer } from '@azure/functions';
import { drainQueues } from '../shared/drain-queues';
import { appConfig, getRuntime } from '../shared/runtime';
import type { DrainReport } from '../shared/transport/drain-loop';

/** Timer (the worker drain's schedule): runs flow executions from the flows queue, like every queue. */
export async function drainFlows(_timer: Timer, context: InvocationContext): Promise<DrainReport[]> {
  const rt = await getRuntime();
  return rt.engine.flowsQueue ? drainQueues(rt, [rt.engine.flowsQueue], context) : [];
}

app.timer('drain-flows', { schedule: appConfig().drain.schedule, handler: drainFlows });
