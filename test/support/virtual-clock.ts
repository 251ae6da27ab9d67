import type { FlowClock } from '../../shared/flows/clock';

interface Sleeper {
  at: number;
  resolve: () => void;
}

/**
 * A clock that moves only when a test says so: sleeps resolve in order of their due time as `advance` passes
 * it, with the microtasks (and I/O-free promise chains) each wake-up starts run before the next one.
 */
export class VirtualClock implements FlowClock {
  private t: number;
  private sleepers: Sleeper[] = [];

  constructor(start = Date.parse('2026-12-01T00:00:00.000Z')) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  get pendingSleeps(): number {
    return this.sleepers.length;
  }

  /** When the earliest sleeper wakes (null: nobody sleeps). */
  nextWakeAt(): number | null {
    return this.sleepers.length === 0 ? null : Math.min(...this.sleepers.map((s) => s.at));
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      if (ms <= 0) return resolve();
      const sleeper: Sleeper = {
        at: this.t + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.push(sleeper);
    });
  }

  /** Moves time forward by ms, waking each sleeper at its due time. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    await settle();
    for (;;) {
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers[0];
      if (!next || next.at > end) break;
      this.sleepers.shift();
      this.t = Math.max(this.t, next.at);
      next.resolve();
      await settle();
    }
    this.t = end;
    await settle();
  }
}

/** Lets pending promise chains (and setImmediate callbacks) run. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}
