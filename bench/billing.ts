// Flex Consumption's execution-time billing applied to a local host's invocation log (LOCAL_INVOCATION_LOG): the
// union of the invocations' intervals, each period billed at least 1 s and rounded up to 100 ms (overlapping
// executions share a period).

export interface Interval {
  start: number;
  end: number;
}

/** Billed milliseconds of these invocations. */
export function billedMs(invocations: readonly Interval[]): { billedMs: number; periods: number } {
  const sorted = [...invocations].sort((a, b) => a.start - b.start);
  let billed = 0;
  let periods = 0;
  let cur: Interval | undefined;
  const close = (p: Interval) => {
    periods++;
    billed += Math.max(1000, Math.ceil((p.end - p.start) / 100) * 100);
  };
  for (const i of sorted) {
    if (cur && i.start <= cur.end) cur.end = Math.max(cur.end, i.end);
    else {
      if (cur) close(cur);
      cur = { ...i };
    }
  }
  if (cur) close(cur);
  return { billedMs: billed, periods };
}
