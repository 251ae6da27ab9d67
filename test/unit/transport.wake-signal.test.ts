import { describe, expect, it } from 'vitest';
import { WakeSignal } from '../../shared/transport/wake';

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
    const started = Date.now();
    expect(await w.wait('q', 1000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(50);
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
    const started = Date.now();
    expect(await w.wait('q', 1000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(50);
  });
});
