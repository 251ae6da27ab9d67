import { FlowIdConflictError, FlowIdError, FlowRunNotFoundError, FlowStatusError, FlowStepNotFoundError, UnknownFlowError } from '../flows/errors';
import { flowIdProblem } from '../flows/flow-id';
import type { Flows } from '../flows/flows';
import { FlowStateTooLargeError, FLOW_STATUSES, type FlowState, type FlowStatus } from '../flows/state';
import { flowRunView } from '../flows/view';
import type { Logger } from '../log';
import { failureAnswer } from './failure';
import { jsonWithPayloads, problem, type HttpAnswer } from './problem';

/** The flows layer's refusals as problem answers; anything else is a store failure (503) or a bug (500). */
export function flowFailureAnswer(err: unknown, logger: Logger, what: string): HttpAnswer {
  if (err instanceof UnknownFlowError || err instanceof FlowRunNotFoundError) return problem(404, err.message);
  if (err instanceof FlowIdConflictError || err instanceof FlowStatusError) return problem(409, err.message);
  if (err instanceof FlowIdError) return problem(400, err.message, [{ field: 'id', message: err.problem }]);
  if (err instanceof FlowStepNotFoundError) return problem(400, err.message, [{ field: 'fromStep', message: `the run has no step '${err.stepName}'` }]);
  if (err instanceof FlowStateTooLargeError) return problem(413, err.message);
  return failureAnswer(err, logger, what);
}

/** The path's flow name and run id checked, and the flows layer present; else the answer to give. */
export function flowPath(flows: Flows | undefined, name: string | undefined, id?: string | undefined): HttpAnswer | undefined {
  if (!flows) return problem(404, 'durable flows are not enabled in this app');
  if (!name || !flows.registry.get(name)) return problem(404, new UnknownFlowError(name ?? '', flows.registry.names()).message);
  if (id !== undefined) {
    const why = flowIdProblem(id);
    if (why) return problem(400, `the run id ${why}`, [{ field: 'id', message: why }]);
  }
  return undefined;
}

/** A run of the named flow as JSON (its result spliced in as stored), or 404 when it is another flow's or gone. */
export function flowRunAnswer(name: string, id: string, state: FlowState | null, status = 200): HttpAnswer {
  if (!state || state.flowName !== name) return problem(404, `no run '${id}' of flow '${name}' (it never existed, or its state expired)`);
  return jsonWithPayloads(status, flowRunView(state));
}

export function isFlowStatus(s: string): s is FlowStatus {
  return (FLOW_STATUSES as readonly string[]).includes(s);
}
