import { MAX_TTL_MS } from './options';
import type { FlowState } from './state';

export const isTerminal = (s: Pick<FlowState, 'status'>) => s.status === 'Succeeded' || s.status === 'Failed';

/**
 * The TTL a write stamps (durable-flows.md §2.4): the idle expiry, raised for a run that is not terminal so it
 * outlives every instant it waits for (a sleep's wakeAt, an awaited step's deadline) and its retention floor
 * (raised by parks of its descendants) by a whole idle expiry. Terminal runs keep the plain idle expiry.
 */
export function effectiveTtlMs(state: FlowState, nowMs: number, stateExpiryMs: number): number {
  if (isTerminal(state)) return stateExpiryMs;
  let latest = nowMs;
  const later = (iso: string | undefined) => {
    if (iso) latest = Math.max(latest, Date.parse(iso));
  };
  later(state.retainUntil === undefined ? undefined : new Date(Date.parse(state.retainUntil) - stateExpiryMs).toISOString());
  for (const step of Object.values(state.steps)) {
    if (step.completed) continue;
    later(step.wakeAt);
    later(step.awaitDeadline);
  }
  return Math.min(MAX_TTL_MS, latest - nowMs + stateExpiryMs);
}

/** The latest instant a run waits for (its wakeAt / awaitDeadline of unfinished steps), or null. */
export function latestWait(state: FlowState): number | null {
  let latest: number | null = null;
  for (const step of Object.values(state.steps)) {
    if (step.completed) continue;
    for (const iso of [step.wakeAt, step.awaitDeadline]) if (iso) latest = Math.max(latest ?? -Infinity, Date.parse(iso));
  }
  return latest;
}
