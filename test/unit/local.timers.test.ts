// The local host's timer loop: slots missed during a run collapse into a past-due run, and a slot missed during
// that past-due run gets another one (it used to be dropped, delaying the next run by a whole interval).
import { describe, expect, it } from 'vitest';
import { parseSchedule } from '../../shared/ncrontab';
import { startTimer } from '../../local/timers';

describe('local timer loop', () => {
  it('a slot missed during a past-due run is run right after it, not dropped', async () => {
    const runs: Array<{ start: number; end: number; isPastDue: boolean }> = [];
    const durations = [2500, 2500]; // every 2 s: the first run misses one slot, its past-due run misses another
    const done = new Promise<void>((resolve) => {
      const timer = startTimer(parseSchedule('*/2 * * * * *'), false, async ({ timer: t }) => {
        const start = Date.now();
        await new Promise((r) => setTimeout(r, durations[runs.length] ?? 0));
        runs.push({ start, end: Date.now(), isPastDue: t.isPastDue });
        if (runs.length === 3) {
          timer.stop();
          resolve();
        }
      });
    });
    await done;
    expect(runs.map((r) => r.isPastDue)).toEqual([false, true, true]);
    // the third run follows the second at once instead of waiting for the next 2-second slot
    expect(runs[2]!.start - runs[1]!.end).toBeLessThan(1000);
  }, 20_000);
});
