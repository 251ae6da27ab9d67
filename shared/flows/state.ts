// The ledger of one flow run (durable-flows.md §2.2). In memory it is one document; stored, its leading completed
// steps are rows of their own and the run's row keeps the rest (step-rows.ts), so a checkpoint writes only what
// changed. It is a wire contract between releases: add fields, never rename or remove one. JSON values the flow
// code produced (input, step results, values, the run's result) are kept as their JSON text (`…Json`), so a
// number is never rounded on its way through the ledger, as payloads are not in the queue (json/raw-json.ts).

export const FLOW_STATE_SCHEMA_VERSION = 1;

export type FlowStatus = 'Running' | 'Succeeded' | 'Failed' | 'Suspended';
export const FLOW_STATUSES: readonly FlowStatus[] = ['Running', 'Succeeded', 'Failed', 'Suspended'];

export interface FlowStepState {
  completed?: boolean;
  /** The step's JSON result as text (set when completed; `null` for a step that returned undefined). */
  resultJson?: string;
  /** An awaited step whose wait timed out: the next execution starts it afresh with a new correlation id. */
  faulted?: boolean;
  message?: string;
  startedAt?: string;
  completedAt?: string;
  /** An awaited step's correlation id while it waits (the breadcrumb: someone is listening for it). */
  pendingCorrelationId?: string;
  /** ISO instant (database clock) after which an awaited step times out. */
  awaitDeadline?: string;
  /** A child step's child run. */
  childFlowId?: string;
  /** A sleep's wake instant (database clock), fixed at the first execution that reached it. */
  wakeAt?: string;
  /**
   * An awaited step's responses checkpointed by the channel's recovery path while no execution listened, oldest
   * first; the next execution hands them to the step's `until` and removes the ones it consumed.
   */
  received?: FlowReceivedResponse[];
  /** A completed step that ended in failure (a failed child, an error response): its replays throw this again. */
  error?: { name: string; message: string };
}

export interface FlowReceivedResponse {
  /** The channel message id (a redelivered recovery adds it once). */
  id: string;
  payloadJson: string;
  final: boolean;
  error?: string;
  receivedAt: string;
}

export interface FlowState {
  schemaVersion: number;
  /** Equals the row's revision column; both are checked on load. */
  revision: number;
  flowId: string;
  flowName: string;
  inputJson: string;
  status: FlowStatus;
  lastMessage?: string;
  createdAt: string;
  updatedAt: string;
  attempts: number;
  steps: Record<string, FlowStepState>;
  values: Record<string, string>;
  /** Succeeded: the body's JSON return value as text. */
  resultJson?: string;
  /** Failed: why. */
  error?: { name: string; message: string };
  parentFlowId?: string;
  parentStepName?: string;
  /** Trace and caller context captured at start, restored on every execution. */
  context?: Record<string, string>;
  /** Operator restarts so far (an execution that began before one stops at its next checkpoint). */
  restarts?: number;
  /** A random token of the start that wrote this ledger (tells a start its own job's write from another start's). */
  startNonce?: string;
  /** Retention floor (ISO, database clock) raised by parks of this run or of a descendant. */
  retainUntil?: string;
  /** How many leading steps the run's step rows held when this state was read or written (step-rows.ts). */
  stepRows?: number;
  /** The name of the last of those steps (tells a ledger whose prefix an operator's restart cut). */
  lastStepRow?: string;
}

/** A stored row that cannot be trusted: malformed JSON, an unknown schema version, a revision or id that differs. */
export class FlowStateUnreadableError extends Error {
  override name = 'FlowStateUnreadableError';
  constructor(
    readonly flowId: string,
    detail: string,
  ) {
    super(`the stored state of flow run '${flowId}' cannot be read: ${detail}`);
  }
}

/** The serialized ledger is larger than the store accepts (checked before anything is published). */
export class FlowStateTooLargeError extends Error {
  override name = 'FlowStateTooLargeError';
  constructor(
    readonly flowId: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`the state of flow run '${flowId}' is ${bytes} bytes, over the limit of ${limit}`);
  }
}

/** Throws RangeError for a ledger of a schema version this release does not write. */
export function checkWritableVersion(state: FlowState): void {
  if (state.schemaVersion !== FLOW_STATE_SCHEMA_VERSION) {
    throw new RangeError(`flow state schema version ${state.schemaVersion} is not ${FLOW_STATE_SCHEMA_VERSION}, the one this release writes`);
  }
}

/** The ledger's JSON text (nulls and undefined omitted). Throws for a schema version this release cannot write. */
export function serializeFlowState(state: FlowState): string {
  checkWritableVersion(state);
  return JSON.stringify(state, (_k, v: unknown) => (v === null ? undefined : v));
}

/**
 * Reads a stored row: the JSON must parse to an object of a known schema version whose revision and flow id
 * equal the row's. Anything else throws FlowStateUnreadableError (a live row reported as absent would strand
 * the run: the executor acknowledges a wake-up whose load returns null).
 */
export function parseFlowState(flowId: string, stateJson: string, revision: number, maxVersion = FLOW_STATE_SCHEMA_VERSION): FlowState {
  let value: unknown;
  try {
    value = JSON.parse(stateJson);
  } catch (e) {
    throw new FlowStateUnreadableError(flowId, `malformed JSON (${(e as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FlowStateUnreadableError(flowId, 'the JSON is not an object');
  }
  const s = value as Partial<FlowState>;
  if (!Number.isInteger(s.schemaVersion) || (s.schemaVersion as number) < FLOW_STATE_SCHEMA_VERSION || (s.schemaVersion as number) > maxVersion) {
    const known = maxVersion === FLOW_STATE_SCHEMA_VERSION ? `${FLOW_STATE_SCHEMA_VERSION}` : `${FLOW_STATE_SCHEMA_VERSION}..${maxVersion}`;
    throw new FlowStateUnreadableError(flowId, `schema version ${String(s.schemaVersion)} is unknown to this release (it reads ${known})`);
  }
  if (s.revision !== revision) {
    throw new FlowStateUnreadableError(flowId, `the JSON's revision ${String(s.revision)} differs from the row's ${revision}`);
  }
  if (s.flowId !== flowId) {
    throw new FlowStateUnreadableError(flowId, `the JSON names flow id '${String(s.flowId)}'`);
  }
  if (typeof s.flowName !== 'string' || typeof s.status !== 'string' || typeof s.steps !== 'object' || s.steps === null) {
    throw new FlowStateUnreadableError(flowId, 'flowName, status or steps is missing');
  }
  s.values ??= {};
  return s as FlowState;
}
