import type { Logger } from '../log';
import { backoffDelay, sleep } from '../sql/retry';
import { emptyDrainReport, type DrainReport } from '../transport/drain-loop';

/** Pause after a drain that ended by itself (a claim error it does not retry): 1 s, doubling up to 30 s. */
const PAUSE = { baseMs: 1000, maxMs: 30_000 };

/**
 * A worker outside Functions: the drain loop with no budget and no idle end, started again (after a pause) when
 * it stops on an error, until `signal` aborts. Returns the counts of every drain it ran.
 */
export async function runUntilAborted(
  queue: string,
  drain: () => Promise<DrainReport>,
  signal: AbortSignal,
  logger: Logger,
  now: () => number = Date.now,
): Promise<DrainReport> {
  const total = emptyDrainReport(queue);
  const started = now();
  let failures = 0;
  while (!signal.aborted) {
    let report: DrainReport | undefined;
    try {
      report = await drain();
      add(total, report);
    } catch (err) {
      logger.error(`the drain loop of '${queue}' failed unexpectedly`, err);
    }
    if (signal.aborted) break;
    failures = report?.stoppedBy === 'error' || report === undefined ? failures + 1 : 0;
    const pause = Math.round(backoffDelay(Math.max(1, failures), PAUSE));
    logger.warn(`the drain loop of '${queue}' stopped (${report?.stoppedBy ?? 'threw'}); claiming again in ${pause} ms`);
    await sleep(pause, signal).catch(() => undefined);
  }
  total.stoppedBy = 'shutdown';
  total.durationMs = now() - started;
  return total;
}

function add(total: DrainReport, r: DrainReport): void {
  total.claimed += r.claimed;
  total.completed += r.completed;
  total.retried += r.retried;
  total.deadLettered += r.deadLettered;
  total.dropped += r.dropped;
  total.released += r.released;
  total.releaseFailures += r.releaseFailures;
  total.lostClaimsRecovered += r.lostClaimsRecovered;
  total.ackFailures += r.ackFailures;
  total.claimFailures += r.claimFailures;
}
