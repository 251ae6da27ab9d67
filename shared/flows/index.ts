// The flows layer's public surface (re-exported by shared/index.ts).
export type { AwaitOptions, FlowContext, StepOptions } from './context';
export {
  AwaitedResponseError,
  ChildFlowFailedError,
  FlowFailedError,
  FlowIdConflictError,
  FlowIdError,
  FlowRunNotFoundError,
  FlowStatusError,
  FlowStepNotFoundError,
  FlowStepTimeoutError,
  UnknownFlowError,
} from './errors';
export { createFlows, type Flows, type FlowsDeps } from './flows';
export { DEFAULT_FLOWS_QUEUE, type FlowPublishInput } from './jobs';
export { DEFAULT_FLOW_OPTIONS, type FlowOptions } from './options';
export { FlowRegistry, type FlowFunction } from './registry';
export type { FlowResponse } from './responses';
export type { StartedFlow } from './starter';
export type { FlowState, FlowStatus, FlowStepState } from './state';
export type { FlowStateStore, FlowSummary } from './store';
