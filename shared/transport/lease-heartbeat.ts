import type { Logger } from '../log';
import { backoffDelay } from '../sql/retry';
import type { Settlement } from './types';

export interface Heartbeat {
  /** Stops renewing; does not wait for a renewal in flight (settlements are fenced anyway). */
  stop(): void;
  readonly lost: boolean;
  readonly renewals: number;
}

/**
 * Renews a lease every lockTimeout/3 while a handler runs (spec §1.9). A failed renewal is retried on a short
 * backoff (from min(1 s, lockTimeout/10), doubling up to the beat) so one bad beat does not lose the lease; a
 * renewal answering false means a peer re-claimed the row: log it and stop.
 */
export function startHeartbeat(
  renew: (s: Settlement, lockTimeoutMs: number) => Promise<boolean>,
  settlement: Settlement,
  lockTimeoutMs: number,
  logger: Logger,
  what: string,
): Heartbeat {
  const beatMs = Math.max(1, Math.floor(lockTimeoutMs / 3));
  const retryBase = Math.max(1, Math.min(1000, Math.floor(lockTimeoutMs / 10)));
  let stopped = false;
  let lost = false;
  let renewals = 0;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;

  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(beat, ms);
    timer.unref?.();
  };
  const beat = async () => {
    if (stopped) return;
    try {
      const ok = await renew(settlement, lockTimeoutMs);
      if (stopped) return;
      renewals++;
      if (!ok) {
        lost = true;
        stopped = true;
        logger.warn(`the lease of ${what} was lost: another consumer claimed it; this run's settlement will be a no-op`);
        return;
      }
      failures = 0;
      schedule(beatMs);
    } catch (err) {
      if (stopped) return;
      failures++;
      if (failures === 1) logger.warn(`failed to renew the lease of ${what}; retrying`, err);
      else logger.debug(`lease renewal retry ${failures} of ${what} failed`, err);
      schedule(Math.min(beatMs, backoffDelay(failures, { baseMs: retryBase, maxMs: beatMs })));
    }
  };
  schedule(beatMs);
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    get lost() {
      return lost;
    },
    get renewals() {
      return renewals;
    },
  };
}
