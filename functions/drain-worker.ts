import { app, type InvocationContext, type Timer } from '@azure/functions';
import { drainQueues } from '../shared/drain-queues';
import { appConfig, getRuntime } from '../shared/runtime';
import type { DrainReport } from '../shared/transport/drain-loop';
import { evaluateSchedules } from '../shared/evaluate-schedules';

/**
 * Timer: drains every worker queue for DRAIN_BUDGET_SECONDS, then ends with nothing left leased. It also fires the
 * due schedule slots (one index seek when none is due): the safety net under the schedules' drain requests, and in
 * timer mode what runs them. Their jobs wake this drain.
 */
export async function drainWorker(_timer: Timer, context: InvocationContext): Promise<DrainReport[]> {
  const rt = await getRuntime();
  const [reports] = await Promise.all([drainQueues(rt, rt.config.queues, context), evaluateSchedules(rt, context)]);
  return reports;
}

app.timer('drain-worker', { schedule: appConfig().drain.schedule, handler: drainWorker });
