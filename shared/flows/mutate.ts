import type { FlowClock } from './clock';
import { effectiveTtlMs } from './retention';
import type { FlowState } from './state';
import type { FlowStateStore } from './store';

/**
 * The lease-less compare-and-swap (durable-flows.md §2.3: recovery, child ends, operator actions): load, let
 * `change` edit a copy (returning false leaves the run alone), write it at revision + 1, and start over on a
 * lost race (8 tries). A run that holds a lease loses its next checkpoint's race and merges the change in.
 * Resolves to the state written, the state left alone (`changed: false`), or null for a missing run.
 */
export async function mutateRun(
  store: FlowStateStore,
  clock: FlowClock,
  stateExpiryMs: number,
  flowId: string,
  change: (s: FlowState) => boolean,
): Promise<{ state: FlowState; changed: boolean } | null> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const current = await store.load(flowId);
    if (!current) return null;
    const next = structuredClone(current);
    if (!change(next)) return { state: current, changed: false };
    const now = clock.now();
    next.revision = current.revision + 1;
    next.updatedAt = new Date(now).toISOString();
    if (await store.tryUpdate(next, current.revision, effectiveTtlMs(next, now, stateExpiryMs))) return { state: next, changed: true };
  }
  throw new Error(`flow run '${flowId}' changed under 8 attempts to update it; try again`);
}
