import { app, type InvocationContext, type Timer } from '@azure/functions';
import { appConfig, getRuntime } from '../shared/runtime';
import { drainPrune, type PruneResult } from '../shared/transport/prune';

/**
 * Timer: deletes dedup keys whose window ended, then dead letters older than DEAD_LETTER_RETENTION_DAYS, in bounded
 * batches (≤ 2 s a run each). Answers the dead-letter prune's result (null when retention is off).
 */
export async function pruneDeadLetters(_timer: Timer, context: InvocationContext): Promise<PruneResult | null> {
  const rt = await getRuntime();
  const keys = await drainPrune(() => rt.store.pruneDedupKeys(), context, 'dedup-key prune');
  if (keys.deleted > 0) {
    rt.metrics.pruned('dedup-keys', keys.deleted);
    context.info(`pruned ${keys.deleted} dedup keys whose window ended in ${keys.batches} batches`);
  }
  const retention = rt.config.deadLetterRetentionMs;
  if (retention === null) return null;
  const result = await drainPrune(
    () => rt.store.pruneDeadLetterBatch(rt.config.deadLetterQueue, retention),
    context,
    'dead-letter prune',
  );
  rt.metrics.pruned('deadletters', result.deleted);
  if (result.deleted > 0) context.info(`pruned ${result.deleted} dead letters in ${result.batches} batches`);
  return result;
}

app.timer('prune-deadletters', { schedule: appConfig().pruneSchedule, handler: pruneDeadLetters });
