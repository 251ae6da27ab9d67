import type { Logger } from './log';
import type { Runtime } from './runtime';
import { drainQueue, type DrainReport } from './transport/drain-loop';

/** One drain timer invocation: drains each queue concurrently with its route's handler, then records its metrics and logs a summary. */
export async function drainQueues(rt: Runtime, queues: readonly string[], logger: Logger): Promise<DrainReport[]> {
  const c = rt.config;
  const reports = await Promise.all(
    queues.map((queue) => {
      const route = rt.routes.get(queue);
      if (!route) throw new Error(`no handler is registered for queue '${queue}'`);
      return rt.track(
        drainQueue({
          store: rt.store,
          queue,
          handler: route.handler,
          ...route.hooks,
          policy: c,
          deadLetterQueue: c.deadLetterQueue,
          lockTimeoutMs: c.lockTimeoutMs,
          batchSize: c.batchSize,
          concurrency: c.handlerConcurrency,
          budgetMs: c.drain.budgetMs,
          idleGraceMs: c.drain.idleGraceMs,
          emptyPollDelayMs: c.emptyPollDelayMs,
          wake: rt.wake,
          logger,
          stopping: rt.stopping,
          claimRetry: c.retry,
        }),
      );
    }),
  );
  for (const r of reports) {
    rt.metrics.drainFinished(r);
    if (r.claimed > 0 || r.stoppedBy === 'error') {
      logger.info(
        `drained '${r.queue}': claimed ${r.claimed}, completed ${r.completed}, retried ${r.retried}, ` +
          `dead-lettered ${r.deadLettered}, released ${r.released} in ${r.durationMs} ms (stopped by ${r.stoppedBy})`,
      );
    }
  }
  return reports;
}
