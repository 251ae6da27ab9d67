import { describe, expect, it, vi } from 'vitest';
import { WakeSignal } from '../../shared/transport/wake';

/**
 * Whether wait() answers `true` without any timer firing: on fake timers the clock stands still, so only a wake
 * already in hand can settle it (a wall-clock bound would flake on a loaded machine).
 */
async function answersAtOnce(w: WakeSignal, queue: string): Promise<boolean | undefined> {
  vi.useFakeTimers();
  try {
    let answer: boolean | undefined;
    void w.wait(queue, 1000).then((woken) => (answer = woken));
    await vi.advanceTimersByTimeAsync(0); // settles pending promises; the 1000 ms timer does not fire
    return answer;
  } finally {
    vi.useRealTimers();
  }
}

describe('wake signal', () => {
  it('wakes waiters of the notified queue only', async () => {
    const w = new WakeSignal();
    const a = w.wait('a', 1000);
    const b = w.wait('b', 50);
    w.notify('a');
    expect(await a).toBe(true);
    expect(await b).toBe(false);
  });
  it('keeps a wake that arrived while nobody waited, for the next wait only', async () => {
    const w = new WakeSignal();
    w.notify('q');
    expect(await answersAtOnce(w, 'q')).toBe(true);
    expect(await w.wait('q', 30)).toBe(false);
  });
  it('an aborted signal ends the wait', async () => {
    const w = new WakeSignal();
    const stop = new AbortController();
    const p = w.wait('q', 10_000, stop.signal);
    stop.abort();
    expect(await p).toBe(false);
  });
});

describe('wake signal bookkeeping', () => {
  it('a wait that timed out leaves no waiter behind, so the next notify is kept for the next wait', async () => {
    const w = new WakeSignal();
    expect(await w.wait('q', 10)).toBe(false);
    w.notify('q');
    expect(await w.wait('q', 1000)).toBe(true);
  });
  it('a cancelled wait leaves no waiter behind either', async () => {
    const w = new WakeSignal();
    const cancel = new AbortController();
    const p = w.wait('q', 10_000, cancel.signal);
    cancel.abort();
    expect(await p).toBe(false);
    w.notify('q');
    expect(await answersAtOnce(w, 'q')).toBe(true);
  });
});

describe('wake signal with several abort signals', () => {
  it('either signal ends the wait, and neither keeps a listener afterwards', async () => {
    const { EventEmitter } = await import('node:events');
    const w = new WakeSignal();
    const stopping = new AbortController();
    const cancel = new AbortController();
    const p = w.wait('q', 10_000, [stopping.signal, undefined, cancel.signal]);
    expect(EventEmitter.getEventListeners(stopping.signal, 'abort')).toHaveLength(1);
    cancel.abort();
    expect(await p).toBe(false);
    expect(EventEmitter.getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
    stopping.abort();
    expect(await w.wait('q', 10_000, [new AbortController().signal, stopping.signal])).toBe(false);
  });
});
