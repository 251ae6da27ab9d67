// The public entry of the engine: build one with createEngine(options), publish, drain or run its queues,
// close it. Nothing here reads the environment or keeps process-wide state (shared/settings turns app settings
// into these options; shared/runtime.ts composes the Functions app from them). docs/engine.md: "Using the engine from
// your own program".

export {
  createEngine,
  EngineOptionsError,
  InvalidJobIdError,
  PublishRejectedError,
  UnknownQueueError,
  UnknownTopicError,
  type DrainRequest,
  type Engine,
  type EngineWithFlows,
  type PublishCallOptions,
  type PublishInput,
  type PublishResult,
  type QueueStatsWithRoute,
  type RunRequest,
  type SubscriptionStats,
  type TopicPublishResult,
} from './engine/create-engine';
export type { EngineOptions, InjectedStores, PoolOptions, QueueRouteOptions, StoreConnection } from './engine/options';
export { DEFAULT_QUEUE_POLICY, type QueuePolicy } from './engine/policy';
export { JobSearchError, JOB_SEARCH_MAX_TOP, type JobSearch, type JobSearchPage } from './engine/job-search';
export { JOB_STATES, type JobRecord, type JobState } from './transport/history';
export type { HandlerDescription, PolicyView, QueueRoute, RouteView } from './engine/routes';
export { HandlerRegistry, type HandlerSpec } from './handlers/registry';
export { consoleLogger, silentLogger, type Logger } from './log';
export { RawJson } from './json/raw-json';
export { MissingPeerError, OPTIONAL_PEERS, type OptionalPeer } from './peer';
export { CALLBACK_QUEUE, RESPONSE_QUEUE } from './queue-names';
export { subscriptionQueue, topicCopyId } from './transport/topic-names';
export type { DrainReport } from './transport/drain-loop';
export { PermanentJobError, type Job, type JobContext, type JobHandler } from './transport/job';
export type { QueueStats } from './transport/types';
export { occurrenceId } from './schedules/occurrence-id';
export { ScheduleRejectedError, type EvaluationReport, type PutResult, type ScheduleService } from './schedules/service';
export type { ScheduleInput } from './schedules/input';
export { SCHEDULE_HEADER, SCHEDULE_SLOT_HEADER, type ScheduleRow, type ScheduleStore, type ScheduleTarget, type MisfirePolicy } from './schedules/types';
export {
  AwaitedResponseError,
  ChildFlowFailedError,
  DEFAULT_FLOW_OPTIONS,
  DEFAULT_FLOWS_QUEUE,
  FlowFailedError,
  FlowIdConflictError,
  FlowIdError,
  FlowRegistry,
  FlowRunNotFoundError,
  FlowStatusError,
  FlowStepNotFoundError,
  FlowStepTimeoutError,
  UnknownFlowError,
  type AwaitOptions,
  type FlowContext,
  type FlowFunction,
  type FlowOptions,
  type FlowPublishInput,
  type FlowResponse,
  type Flows,
  type FlowState,
  type StepOptions,
  type FlowStateStore,
  type FlowStatus,
  type FlowStepState,
  type FlowSummary,
  type StartedFlow,
} from './flows';
export type { FlowsEngineOptions } from './engine/flows-wiring';
export { JobCancelledError, type CancelOutcome, type QueueState, type RescheduleOutcome, type RescheduleTime } from './transport/job-control';
