// A run as the HTTP API (and the dashboard) shows it: its status, result or error, and each step with its state
// and times. JSON the flow produced (the result) travels as its stored text (RawJson), never re-serialised.
import { RawJson } from '../json/raw-json';
import type { FlowState, FlowStepState } from './state';

export type FlowStepView = {
  name: string;
  state: 'completed' | 'failed' | 'sleeping' | 'waiting-for-response' | 'waiting-for-child' | 'faulted' | 'started';
  startedAt?: string;
  completedAt?: string;
  wakeAt?: string;
  awaitDeadline?: string;
  correlationId?: string;
  childId?: string;
  message?: string;
  error?: string;
};

export function flowRunView(s: FlowState): Record<string, unknown> {
  return {
    id: s.flowId,
    flow: s.flowName,
    status: s.status,
    ...(s.status === 'Succeeded' && s.resultJson !== undefined ? { result: new RawJson(s.resultJson) } : {}),
    ...(s.error ? { error: s.error } : {}),
    ...(s.lastMessage !== undefined ? { lastMessage: s.lastMessage } : {}),
    attempts: s.attempts,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    ...(s.parentFlowId ? { parentId: s.parentFlowId } : {}),
    steps: Object.entries(s.steps).map(([name, step]) => stepView(name, step)),
  };
}

function stepView(name: string, step: FlowStepState): FlowStepView {
  const state: FlowStepView['state'] = step.completed
    ? step.error
      ? 'failed'
      : 'completed'
    : step.faulted
      ? 'faulted'
      : step.pendingCorrelationId
        ? 'waiting-for-response'
        : step.childFlowId
          ? 'waiting-for-child'
          : step.wakeAt
            ? 'sleeping'
            : 'started';
  return {
    name,
    state,
    ...(step.startedAt ? { startedAt: step.startedAt } : {}),
    ...(step.completedAt ? { completedAt: step.completedAt } : {}),
    ...(step.wakeAt ? { wakeAt: step.wakeAt } : {}),
    ...(step.awaitDeadline && !step.completed ? { awaitDeadline: step.awaitDeadline } : {}),
    ...(step.pendingCorrelationId && !step.completed ? { correlationId: step.pendingCorrelationId } : {}),
    ...(step.childFlowId ? { childId: step.childFlowId } : {}),
    ...(step.message && !step.completed ? { message: step.message } : {}),
    ...(step.error ? { error: step.error.message } : {}),
  };
}
