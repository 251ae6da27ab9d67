// Builders shared by the carried-jobs contract files (flows.carried-jobs, postgres.flow-carried-jobs): a run's state
// and a job its write carries.
import { randomUUID } from 'node:crypto';
import type { CarriedJob } from '../../shared/flows/jobs';
import { FLOW_STATE_SCHEMA_VERSION, type FlowState } from '../../shared/flows/state';

export const LEASE = 30_000;
export const TTL = 3_600_000;

export function state(flowId: string, patch: Partial<FlowState> = {}): FlowState {
  const at = new Date().toISOString();
  return { schemaVersion: FLOW_STATE_SCHEMA_VERSION, revision: 0, flowId, flowName: 'carry', inputJson: '{}', status: 'Running', createdAt: at, updatedAt: at, attempts: 0, steps: {}, values: {}, ...patch };
}

export const job = (queue: string, patch: Partial<CarriedJob> = {}): CarriedJob => ({ id: randomUUID(), queue, payloadJson: '{"n":1}', headersJson: '{"h":"v"}', delayMs: 0, priority: 0, ...patch });
