// The ONE list of the app's custom metric names and their dimensions (Application Insights `customMetrics`:
// `name`, `customDimensions.*`). The workbook and the alerts in infra/modules/observability.bicep query these
// names; test/unit/telemetry.metrics.test.ts keeps its header list and this one in line.

export const METRIC = {
  /** counter: jobs inserted by a publish (duplicates of an existing id are not counted). dims: queue */
  jobsPublished: 'asyncresponse.jobs.published',
  /** counter: deliveries claimed by one drain. dims: queue */
  jobsClaimed: 'asyncresponse.jobs.claimed',
  /** counter: deliveries whose handler succeeded (acked). dims: queue */
  jobsCompleted: 'asyncresponse.jobs.completed',
  /** counter: deliveries whose handler failed. dims: queue, outcome = redelivered | deadlettered */
  jobsFailed: 'asyncresponse.jobs.failed',
  /** counter: jobs moved to the dead-letter queue. dims: queue */
  jobsDeadLettered: 'asyncresponse.jobs.deadlettered',
  /**
   * counter: jobs handed back for another attempt. dims: queue, outcome = failed (NAK with backoff after a
   * failed attempt) | released (claimed but not started before the drain ended; NAK 0)
   */
  jobsRedelivered: 'asyncresponse.jobs.redelivered',
  /** gauge: rows claimable now. dims: queue */
  queueReady: 'asyncresponse.queue.ready',
  /** gauge: rows available later (delayed publish, redelivery backoff). dims: queue */
  queueDelayed: 'asyncresponse.queue.delayed',
  /** gauge: rows claimed under an unexpired lease. dims: queue */
  queueLeased: 'asyncresponse.queue.leased',
  /** gauge: dead letters whose source is this queue. dims: queue */
  queueDeadLettered: 'asyncresponse.queue.deadlettered',
  /** gauge: age of the oldest ready row in seconds (0 when nothing is ready). dims: queue */
  queueOldestReadyAge: 'asyncresponse.queue.oldest_ready_age_seconds',
  /** value: length of one drain invocation on one queue. dims: queue, outcome = idle | budget | shutdown | error */
  drainDuration: 'asyncresponse.drain.duration_ms',
  /** value: length of one channel sweep. no dims */
  sweepDuration: 'asyncresponse.channel.sweep.duration_ms',
  /** counter: rows deleted by a prune. dims: table = deadletters | messages | subscribers | recovery */
  pruneDeleted: 'asyncresponse.prune.deleted',
  /**
   * counter: responses stored in the channel (a repeated id is not counted). dims: delivery = live | stored |
   * recovery, source = http (POST /api/responses) | worker (a worker job's result or dead letter) | ingress
   * (the response queue). Not (yet) charted by the workbook.
   */
  responsesPublished: 'asyncresponse.responses.published',
  /** counter: flow runs started (a repeated start of an existing run is not counted). dims: flow */
  flowRunsStarted: 'asyncresponse.flows.started',
  /** counter: flow runs that ended. dims: flow, outcome = succeeded | failed (a cancel counts as failed) */
  flowRunsEnded: 'asyncresponse.flows.ended',
  /** value: a flow step's duration as the execution that completed it saw it. dims: flow, kind = step | await | sleep | child */
  flowStepDuration: 'asyncresponse.flows.step.duration_ms',
  /** counter: executions that parked their run (no worker held while it waits). dims: flow, on = timer | response | child */
  flowRunsParked: 'asyncresponse.flows.parked',
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** Every name, in the order of the list above. */
export const METRIC_NAMES: readonly MetricName[] = Object.values(METRIC);

/** Names the workbook and alerts do not use (so observability.bicep does not list them). */
export const METRICS_OUTSIDE_WORKBOOK: readonly MetricName[] = [
  METRIC.responsesPublished,
  METRIC.flowRunsStarted,
  METRIC.flowRunsEnded,
  METRIC.flowStepDuration,
  METRIC.flowRunsParked,
];

/** Dimension (customDimensions) keys. */
export const DIM = {
  queue: 'queue',
  outcome: 'outcome',
  table: 'table',
  delivery: 'delivery',
  source: 'source',
  flow: 'flow',
  kind: 'kind',
  on: 'on',
} as const;

export type PruneTable = 'deadletters' | 'dedup-keys' | 'history' | 'messages' | 'subscribers' | 'recovery';
export type ResponseSource = 'http' | 'worker' | 'ingress';
