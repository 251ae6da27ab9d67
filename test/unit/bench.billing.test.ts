import { describe, expect, it } from 'vitest';
import { billedMs } from '../../bench/billing';

describe('Flex Consumption billing of an invocation log', () => {
  it('bills each period at least 1 s, rounded up to 100 ms, and overlapping invocations once', () => {
    expect(billedMs([])).toEqual({ billedMs: 0, periods: 0 });
    expect(billedMs([{ start: 0, end: 30 }])).toEqual({ billedMs: 1000, periods: 1 });
    expect(billedMs([{ start: 0, end: 1201 }])).toEqual({ billedMs: 1300, periods: 1 });
    // two overlapping and one touching: one period 0..2500; a separate one later
    expect(billedMs([{ start: 1000, end: 2500 }, { start: 0, end: 1500 }, { start: 2500, end: 2500 }, { start: 9000, end: 9100 }])).toEqual({ billedMs: 2500 + 1000, periods: 2 });
  });

  it('a timer firing every 5 s alone costs 12 minutes an hour', () => {
    const runs = Array.from({ length: 720 }, (_, i) => ({ start: i * 5000, end: i * 5000 + 40 }));
    expect(billedMs(runs).billedMs / 60_000).toBe(12);
  });
});
