import { app, type InvocationContext, type Timer } from '@azure/functions';
import { appConfig, getRuntime } from '../shared/runtime';
import { drainQueue, type DrainReport } from '../shared/transport/drain-loop';

/** Timer: drains every worker queue for DRAIN_BUDGET_SECONDS, then ends with nothing left leased. */
export async function drainWorker(_timer: Timer, context: InvocationContext): Promise<DrainReport[]> {
  const rt = await getRuntime();
  const c = rt.config;
  const reports = await Promise.all(
    c.queues.map((queue) =>
      rt.track(
      drainQueue({
        store: rt.store,
        queue,
        handler: rt.handlers.get(queue)!,
        policy: c,
        deadLetterQueue: c.deadLetterQueue,
        lockTimeoutMs: c.lockTimeoutMs,
        batchSize: c.batchSize,
        concurrency: c.handlerConcurrency,
        budgetMs: c.drain.budgetMs,
        idleGraceMs: c.drain.idleGraceMs,
        emptyPollDelayMs: c.emptyPollDelayMs,
        wake: rt.wake,
        logger: context,
        stopping: rt.stopping,
      }),
      ),
    ),
  );
  for (const r of reports) {
    if (r.claimed > 0 || r.stoppedBy === 'error') {
      context.info(
        `drained '${r.queue}': claimed ${r.claimed}, completed ${r.completed}, retried ${r.retried}, ` +
          `dead-lettered ${r.deadLettered}, released ${r.released} in ${r.durationMs} ms (stopped by ${r.stoppedBy})`,
      );
    }
  }
  return reports;
}

app.timer('drain-worker', { schedule: appConfig().drain.schedule, handler: drainWorker });
