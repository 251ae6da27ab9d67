// Fires one timer function on its schedule, as the Functions timer trigger does: UTC, never overlapping
// itself; slots missed while a run was still going collapse into one past-due run right after it.
import type { Timer } from '@azure/functions';
import { nextOccurrence, type Schedule } from '../shared/ncrontab';

/** DateTime.MinValue, what the host reports as "last" before a timer has ever run. */
const NEVER = '0001-01-01T00:00:00.000Z';
/** setTimeout's ceiling (~24.8 days); longer waits are chained. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export interface TimerRun {
  timer: Timer;
  /** For the "Executing … (Reason='…')" line. */
  reason: string;
}

export interface RunningTimer {
  /** Stops scheduling; a run already going is not interrupted. */
  stop(): void;
}

export function startTimer(
  schedule: Schedule,
  runOnStartup: boolean,
  run: (r: TimerRun) => Promise<unknown>,
): RunningTimer {
  let stopped = false;
  let handle: NodeJS.Timeout | undefined;
  let cancelSleep: (() => void) | undefined;
  let last = NEVER;

  const sleepUntil = (at: number): Promise<boolean> =>
    new Promise((resolve) => {
      cancelSleep = () => resolve(false);
      const step = (): void => {
        if (stopped) return resolve(false);
        const wait = at - Date.now();
        if (wait <= 0) return resolve(true);
        handle = setTimeout(step, Math.min(wait, MAX_DELAY_MS));
      };
      step();
    });

  const fire = async (slot: Date, isPastDue: boolean, note: string): Promise<void> => {
    const now = new Date();
    const timer: Timer = {
      isPastDue,
      schedule: { adjustForDST: false },
      scheduleStatus: { last, next: nextOccurrence(schedule, slot).toISOString(), lastUpdated: now.toISOString() },
    };
    last = slot.toISOString();
    // A failing run is logged by the invoker; the schedule goes on.
    await run({ timer, reason: `Timer fired at ${now.toISOString()}${note}` }).catch(() => undefined);
  };

  const loop = async (): Promise<void> => {
    if (runOnStartup) await fire(new Date(), false, ' (runOnStartup)');
    let slot = nextOccurrence(schedule, new Date());
    while (!stopped) {
      if (!(await sleepUntil(slot.getTime()))) return;
      await fire(slot, false, '');
      // Slots missed during a run collapse into one past-due run; one missed during that run gets another.
      let ranFrom = slot;
      for (;;) {
        if (stopped) return;
        const missed = nextOccurrence(schedule, ranFrom);
        if (missed.getTime() > Date.now()) break;
        ranFrom = new Date();
        await fire(missed, true, ' (past due)');
      }
      slot = nextOccurrence(schedule, new Date());
    }
  };
  loop().catch((err: unknown) => console.error('Timer loop stopped:', err));

  return {
    stop() {
      stopped = true;
      if (handle) clearTimeout(handle);
      cancelSleep?.();
    },
  };
}
