// The flows layer's errors. FlowFailedError is the one a flow throws to end its run as failed; every other
// error a flow throws is retried through the queue (and finally dead-letters: the "run is stuck" alarm).

/** Ends the run as Failed (terminal: the execution is acknowledged, nothing is retried). */
export class FlowFailedError extends Error {
  override name = 'FlowFailedError';
}

/** A child run ended as Failed; the parent's `child()` throws it (terminal unless the flow catches it). */
export class ChildFlowFailedError extends FlowFailedError {
  override name = 'ChildFlowFailedError';
  constructor(
    readonly childFlowId: string,
    readonly childError: { name: string; message: string } | undefined,
  ) {
    super(`child run '${childFlowId}' failed: ${childError?.message ?? 'no reason recorded'}`);
  }
}

/** The response an awaited step accepted carries an error (the remote job failed or was dead-lettered). */
export class AwaitedResponseError extends FlowFailedError {
  override name = 'AwaitedResponseError';
  constructor(
    readonly stepName: string,
    readonly responseError: string,
  ) {
    super(`the response awaited by step '${stepName}' reports a failure: ${responseError}`);
  }
}

/** An awaited step's window passed without an accepted response: the step is faulted and restarts afresh. */
export class FlowStepTimeoutError extends Error {
  override name = 'FlowStepTimeoutError';
  constructor(readonly stepName: string) {
    super(`step '${stepName}' timed out waiting for its response; the next execution starts it again with a new correlation id`);
  }
}

/**
 * Internal: the execution stops here without failing the run: it parked (a long sleep, an awaited response, a
 * child still running), or an operator suspended or cancelled the run under it. Flow code must let it through;
 * the executor acts on it even when flow code swallowed it (it is sticky on the context).
 */
export class FlowInterrupt extends Error {
  override name = 'FlowInterrupt';
  constructor(readonly reason: 'parked' | 'status-changed') {
    super(reason === 'parked' ? 'the flow run parked (it resumes when woken)' : 'the flow run was suspended or ended by an operator');
  }
}

/** Another execution took the run's lease (or the run vanished): this one's writes are refused. */
export class FlowLeaseLostError extends Error {
  override name = 'FlowLeaseLostError';
  constructor(flowId: string, detail: string) {
    super(`flow run '${flowId}': ${detail}`);
  }
}

export class UnknownFlowError extends Error {
  override name = 'UnknownFlowError';
  constructor(
    readonly flowName: string,
    readonly known: readonly string[],
  ) {
    super(`no flow is registered under the name '${flowName}' (registered: ${known.join(', ') || 'none'})`);
  }
}

/** The id names a run of another flow or with other input: nothing was started. */
export class FlowIdConflictError extends Error {
  override name = 'FlowIdConflictError';
  constructor(
    readonly flowId: string,
    detail: string,
  ) {
    super(`flow run id '${flowId}' is taken: ${detail}`);
  }
}

export class FlowIdError extends Error {
  override name = 'FlowIdError';
  constructor(
    readonly flowId: unknown,
    readonly problem: string,
  ) {
    super(`flow run id ${problem}`);
  }
}

export class FlowRunNotFoundError extends Error {
  override name = 'FlowRunNotFoundError';
  constructor(readonly flowId: string) {
    super(`no flow run '${flowId}' (it never existed, or its state expired)`);
  }
}

/** An operator action that does not apply in the run's status (e.g. resuming a run that is not suspended). */
export class FlowStatusError extends Error {
  override name = 'FlowStatusError';
  constructor(
    readonly flowId: string,
    readonly status: string,
    action: string,
  ) {
    super(`flow run '${flowId}' is ${status}: it cannot be ${action}`);
  }
}

/** A restart names a step the run never recorded. */
export class FlowStepNotFoundError extends Error {
  override name = 'FlowStepNotFoundError';
  constructor(
    readonly flowId: string,
    readonly stepName: string,
  ) {
    super(`flow run '${flowId}' has no step '${stepName}' to restart from`);
  }
}
