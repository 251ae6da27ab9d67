import { app, type InvocationContext, type Timer } from '@azure/functions';
import { appConfig, getRuntime } from '../shared/runtime';
import { drainPrune, type PruneResult } from '../shared/transport/prune';
import { pruneHistory } from '../shared/transport/history-prune';

export type PruneRunResult = PruneResult & {
  /** The job-history prune of the queues with JOB_HISTORY_RETENTION_DAYS > 0; absent when none keeps history. */
  history?: PruneResult;
};

/**
 * Timer: deletes dedup keys whose window ended, then dead letters older than DEAD_LETTER_RETENTION_DAYS, then history
 * rows older than their queue's JOB_HISTORY_RETENTION_DAYS, in bounded batches (≤ 2 s each part a run). Answers the
 * dead-letter and history prunes' result, null when both are off.
 */
export async function pruneDeadLetters(_timer: Timer, context: InvocationContext): Promise<PruneRunResult | null> {
  const rt = await getRuntime();
  const keys = await drainPrune(() => rt.store.pruneDedupKeys(), context, 'dedup-key prune');
  if (keys.deleted > 0) {
    rt.metrics.pruned('dedup-keys', keys.deleted);
    context.info(`pruned ${keys.deleted} dedup keys whose window ended in ${keys.batches} batches`);
  }
  const retention = rt.config.deadLetterRetentionMs;
  const keeping = Object.entries(rt.config.routes)
    .map(([queue, r]) => [queue, r.policy.historyRetentionMs] as const)
    .filter(([, ms]) => ms > 0);
  if (retention === null && keeping.length === 0) return null;
  const result: PruneRunResult =
    retention === null
      ? { deleted: 0, batches: 0, cutShort: false }
      : await drainPrune(() => rt.store.pruneDeadLetterBatch(rt.config.deadLetterQueue, retention), context, 'dead-letter prune');
  if (retention !== null) rt.metrics.pruned('deadletters', result.deleted);
  if (result.deleted > 0) context.info(`pruned ${result.deleted} dead letters in ${result.batches} batches`);
  if (keeping.length > 0) {
    result.history = await pruneHistory(rt.store, keeping, context);
    rt.metrics.pruned('history', result.history.deleted);
    if (result.history.deleted > 0) context.info(`pruned ${result.history.deleted} job-history rows in ${result.history.batches} batches`);
  }
  return result;
}

app.timer('prune-deadletters', { schedule: appConfig().pruneSchedule, handler: pruneDeadLetters });
