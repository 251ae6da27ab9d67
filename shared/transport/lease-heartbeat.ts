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
/** A lease is renewed every third of its lock timeout (the one place that says so: the heartbeat and its group). */
export function heartbeatBeatMs(lockTimeoutMs: number): number {
  return Math.max(1, Math.floor(lockTimeoutMs / 3));
}

export function startHeartbeat(
  renew: (s: Settlement, lockTimeoutMs: number) => Promise<boolean>,
  settlement: Settlement,
  lockTimeoutMs: number,
  logger: Logger,
  what: string,
  /** When the first renewal is due (default: one beat, a third of the lock timeout). */
  firstBeatMs?: number,
): Heartbeat {
  const beatMs = heartbeatBeatMs(lockTimeoutMs);
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
  schedule(firstBeatMs ?? beatMs);
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

/**
 * The heartbeats of one drain. A lease needs no renewal before a third of it has passed, and most jobs end long
 * before: one timer for the whole drain, ticking every quarter of that first beat while jobs run, starts a job's
 * own heartbeat (startHeartbeat, which then renews on schedule) once the job has run for a beat. A job is
 * therefore first renewed between 1 and 1.25 beats after it started (10–12.5 s of a 30 s lease), and a job that
 * ends sooner costs a Set entry instead of a timer. The jobs in the Set are the running ones, at most the drain's
 * concurrency, so a tick is cheap.
 */
export class HeartbeatGroup {
  private readonly waiting = new Set<Pending>();
  private timer: NodeJS.Timeout | undefined;
  private readonly beatMs: number;

  constructor(
    private readonly lockTimeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.beatMs = heartbeatBeatMs(lockTimeoutMs);
  }

  start(renew: (s: Settlement, lockTimeoutMs: number) => Promise<boolean>, settlement: Settlement, logger: Logger, what: string): Heartbeat {
    const pending = new Pending(this.waiting, this.now(), renew, settlement, logger, what);
    this.waiting.add(pending);
    this.timer ??= this.schedule();
    return pending;
  }

  private schedule(): NodeJS.Timeout {
    const t = setTimeout(() => this.tick(), Math.max(1, Math.floor(this.beatMs / 4)));
    t.unref?.();
    return t;
  }

  private tick(): void {
    this.timer = undefined;
    const now = this.now();
    for (const p of this.waiting) {
      const ranFor = now - p.startedAt;
      if (ranFor < this.beatMs) continue;
      this.waiting.delete(p);
      // the first renewal now (a beat has passed); startHeartbeat keeps renewing every beat after it
      p.own = startHeartbeat(p.renew, p.settlement, this.lockTimeoutMs, p.logger, p.what, 0);
    }
    if (this.waiting.size > 0) this.timer = this.schedule();
  }
}

/** A job's heartbeat in the group: waiting for its first beat, then its own (startHeartbeat). */
class Pending implements Heartbeat {
  own: Heartbeat | undefined;

  constructor(
    private readonly waiting: Set<Pending>,
    readonly startedAt: number,
    readonly renew: (s: Settlement, lockTimeoutMs: number) => Promise<boolean>,
    readonly settlement: Settlement,
    readonly logger: Logger,
    readonly what: string,
  ) {}

  stop(): void {
    this.waiting.delete(this);
    this.own?.stop();
  }

  get lost(): boolean {
    return this.own?.lost ?? false;
  }

  get renewals(): number {
    return this.own?.renewals ?? 0;
  }
}
