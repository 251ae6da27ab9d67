import type { Logger } from '../log';
import { drainPrune, PRUNE_BUDGET_MS, type PruneResult } from './prune';
import type { TransportStore } from './types';

/**
 * The history prune of every queue that keeps history, one queue after another in bounded batches, sharing one
 * budget: a queue the budget did not reach is left to the next run. Never throws (drainPrune logs a failure).
 */
export async function pruneHistory(
  store: Pick<TransportStore, 'pruneHistoryBatch'>,
  retentionByQueue: ReadonlyArray<readonly [queue: string, retentionMs: number]>,
  logger: Logger,
  budgetMs = PRUNE_BUDGET_MS,
  now: () => number = Date.now,
): Promise<PruneResult> {
  const started = now();
  const total: PruneResult = { deleted: 0, batches: 0, cutShort: false };
  for (const [queue, retentionMs] of retentionByQueue) {
    if (!(retentionMs > 0)) continue;
    const left = budgetMs - (now() - started);
    if (left <= 0) return { ...total, cutShort: true };
    const r = await drainPrune(() => store.pruneHistoryBatch(queue, retentionMs), logger, `job-history prune of '${queue}'`, left, now);
    total.deleted += r.deleted;
    total.batches += r.batches;
    if (r.cutShort) return { ...total, cutShort: true };
  }
  return total;
}
