import { app, type InvocationContext, type Timer } from '@azure/functions';
import { CALLBACK_QUEUE, RESPONSE_QUEUE } from '../shared/queue-names';
import { appConfig, getRuntime } from '../shared/runtime';
import type { QueueStats } from '../shared/transport/types';

/**
 * Timer: the queue gauges (ready, delayed, leased, dead-lettered, oldest ready age) of every worker queue, of
 * `response` and `callbacks`, and of the flows queue when flows are on, for the workbook and the oldest-ready-age alert. Does nothing while telemetry is off.
 */
export async function queueMetrics(_timer: Timer, context: InvocationContext): Promise<QueueStats[]> {
  const rt = await getRuntime();
  if (!rt.metrics.enabled) return [];
  const flowsQueue = rt.engine.flowsQueue;
  const queues = [...rt.config.queues, RESPONSE_QUEUE, CALLBACK_QUEUE, ...(flowsQueue === undefined ? [] : [flowsQueue])];
  const stats: QueueStats[] = [];
  for (const queue of queues) {
    try {
      const s = await rt.track(rt.store.queueStats(queue, rt.config.deadLetterQueue));
      rt.metrics.queueDepth(s);
      stats.push(s);
    } catch (err) {
      context.warn(`queue metrics: reading the statistics of '${queue}' failed; the next run retries`, err);
    }
  }
  return stats;
}

app.timer('queue-metrics', { schedule: appConfig().queueMetricsSchedule, handler: queueMetrics });
