import type { FlowClock } from './clock';
import { wakeJobId, type FlowJobQueue } from './jobs';
import { mutateRun } from './mutate';
import type { FlowResponseWatch } from './responses';
import type { FlowReceivedResponse } from './state';
import type { FlowStateStore } from './store';

/** Progress responses kept per step between executions; beyond it the oldest non-final ones are dropped. */
const MAX_RECEIVED = 50;

export interface RecoveredResponse {
  id: string;
  correlationId: string;
  payloadJson: string;
  final: boolean;
  error?: string;
}

/**
 * The `flow` internal target of the channel's recovery path: a response that reached no live waiter is
 * checkpointed into the step still pending on its correlation id (lease-less compare-and-swap, fenced to that id),
 * then the run is woken unless it is suspended (it keeps the response; resume wakes it). A response for a step
 * that completed, restarted with another id, or a run that ended is dropped. Returns what it did.
 */
export async function recoverResponse(
  deps: { store: FlowStateStore; clock: FlowClock; jobs: FlowJobQueue; stateExpiryMs: number },
  watch: FlowResponseWatch,
  response: RecoveredResponse,
): Promise<'woken' | 'kept' | 'stale'> {
  const { flowId, stepName } = watch;
  const receivedAt = new Date(deps.clock.now()).toISOString();
  let pending = false;
  const r = await mutateRun(deps.store, deps.clock, deps.stateExpiryMs, flowId, (s) => {
    const step = s.steps[stepName];
    pending = (s.status === 'Running' || s.status === 'Suspended') && !!step && !step.completed && !step.faulted && step.pendingCorrelationId === response.correlationId;
    if (!pending || !step) return false;
    const list = step.received ?? [];
    if (list.some((x) => x.id === response.id)) return false; // a redelivered callback job: the wake-up below is re-sent
    const entry: FlowReceivedResponse = { id: response.id, payloadJson: response.payloadJson, final: response.final, receivedAt, ...(response.error !== undefined ? { error: response.error } : {}) };
    const next = [...list, entry];
    while (next.length > MAX_RECEIVED) next.splice(next.findIndex((x) => !x.final) >= 0 ? next.findIndex((x) => !x.final) : 0, 1);
    step.received = next;
    return true;
  });
  if (!r || !pending) return 'stale';
  if (r.state.status !== 'Running') return 'kept';
  await deps.jobs.publish({ id: wakeJobId(flowId, `response:${response.id}`), job: { kind: 'wake', flowId, reason: 'response' }, delayMs: 0 });
  return 'woken';
}
