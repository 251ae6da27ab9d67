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
    await Promise.all(reports.filter((r) => r.stoppedBy === 'budget' && r.claimed > 0).map((r) => fanOutIfLeft(rt, r.queue, logger)));
  }
  return reports;
}

/**
 * A drain that reached its budget may simply have idled into it (a budget shorter than the idle grace): only rows
 * still ready ask for more drains, or requests would beget requests forever.
 */
async function fanOutIfLeft(rt: Runtime, queue: string, logger: Logger): Promise<void> {
  try {
    const { ready } = await rt.track(rt.store.queueStats(queue, rt.config.deadLetterQueue));
    if (ready > 0) logger.info(`'${queue}' has ${ready} ready after the budget: asked for ${await rt.drainRequests!.fanOut(queue)} more drain(s)`);
  } catch (err) {
    logger.warn(`'${queue}' reached its budget; reading its statistics for the fan-out failed (the timers drain what is left)`, err);
  }
}
