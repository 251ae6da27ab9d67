import type { Logger } from '../log';

export const PRUNE_BATCH = 1000;
export const PRUNE_BUDGET_MS = 2000;

export interface PruneResult {
  deleted: number;
  batches: number;
  /** true when it stopped at its budget with full batches still coming back. */
  cutShort: boolean;
}

/**
 * Runs bounded delete batches while each deletes a full batch and the budget lasts (the first batch always
 * runs). Never throws: a prune must not fail the work it follows.
 */
export async function drainPrune(
  batch: () => Promise<number>,
  logger: Logger,
  what: string,
  budgetMs = PRUNE_BUDGET_MS,
  now: () => number = Date.now,
): Promise<PruneResult> {
  const started = now();
  let deleted = 0;
  let batches = 0;
  try {
    for (;;) {
      const n = await batch();
      batches++;
      deleted += n;
      if (n < PRUNE_BATCH) return { deleted, batches, cutShort: false };
      if (now() - started >= budgetMs) {
        safe(() => logger.warn(`${what} stopped at its ${budgetMs} ms budget after ${deleted} rows; the rest is left to the next run`));
        return { deleted, batches, cutShort: true };
      }
    }
  } catch (err) {
    safe(() => logger.error(`${what} failed after ${deleted} rows`, err));
    return { deleted, batches, cutShort: true };
  }
}

function safe(f: () => void): void {
  try {
    f();
  } catch {
    /* a throwing logger must not turn a swallowed prune failure into a thrown one */
  }
}
