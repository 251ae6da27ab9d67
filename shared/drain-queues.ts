import type { Logger } from './log';
import type { Runtime } from './runtime';
import type { DrainReport } from './transport/drain-loop';

/**
 * One drain invocation (a timer's, or a drain request's with its shorter idle grace): drains each queue
 * concurrently with its own route, then records its metrics and logs a summary. In queue mode a drain stopped by
 * its budget (work left) asks for more drains, so more instances join (fan-out).
 */
export async function drainQueues(rt: Runtime, queues: readonly string[], logger: Logger, o: { idleGraceMs?: number } = {}): Promise<DrainReport[]> {
  const { budgetMs } = rt.config.drain;
  const idleGraceMs = o.idleGraceMs ?? rt.config.drain.idleGraceMs;
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
  const sender = rt.drainRequests;
  if (sender) {
    await Promise.all(
      reports
        .filter((r) => r.stoppedBy === 'budget')
        .map(async (r) => logger.info(`'${r.queue}' has work left after the budget: asked for ${await sender.fanOut(r.queue)} more drain(s)`)),
    );
  }
  return reports;
}
