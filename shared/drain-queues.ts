import type { Logger } from './log';
import type { Runtime } from './runtime';
import type { DrainReport } from './transport/drain-loop';

/** One drain timer invocation: drains each queue concurrently with its own route, then records its metrics and logs a summary. */
export async function drainQueues(rt: Runtime, queues: readonly string[], logger: Logger): Promise<DrainReport[]> {
  const { budgetMs, idleGraceMs } = rt.config.drain;
  const reports = await Promise.all(queues.map((queue) => rt.track(rt.engine.drain(queue, { budgetMs, idleGraceMs, signal: rt.stopping, logger }))));
  for (const r of reports) {
    rt.metrics.drainFinished(r);
    if (r.claimed > 0 || r.stoppedBy === 'error') {
      logger.info(
        `drained '${r.queue}': claimed ${r.claimed}, completed ${r.completed}, retried ${r.retried}, ` +
          `dead-lettered ${r.deadLettered}, ${r.dropped > 0 ? `dropped ${r.dropped}, ` : ''}released ${r.released} in ${r.durationMs} ms (stopped by ${r.stoppedBy})`,
      );
    }
  }
  return reports;
}
