import { randomUUID } from 'node:crypto';
import { canonicalJson, toJson } from './canonical-json';
import type { FlowClock } from './clock';
import { FlowIdConflictError, FlowIdError, UnknownFlowError } from './errors';
import { flowIdProblem } from './flow-id';
import { startJobId, type FlowJobQueue } from './jobs';
import type { FlowMetrics } from './metrics';
import type { FlowRegistry } from './registry';
import { FLOW_STATE_SCHEMA_VERSION, serializeFlowState, type FlowState, type FlowStatus } from './state';
import type { FlowStateStore } from './store';

export interface StartOptions {
  /** The run id (default: a new UUID); a repeat with the same flow and input returns the existing run. */
  id?: string;
  parent?: { flowId: string; stepName: string };
  context?: Record<string, string>;
}

export interface StartedFlow {
  id: string;
  status: FlowStatus;
  /** false: a run with this id, flow and input existed; nothing new was started. */
  created: boolean;
}

export interface StarterDeps {
  store: FlowStateStore;
  registry: FlowRegistry;
  jobs: FlowJobQueue;
  clock: FlowClock;
  metrics: FlowMetrics;
  stateExpiryMs: number;
}

/**
 * Starts a run (durable-flows.md §1.2): validate the id, then publish the start job carrying the whole initial
 * ledger (the commit point: no Running ledger can exist without a job), then write the ledger so an immediate
 * read sees it (finding it written already is expected); where the store carries jobs, the ledger's insert and
 * the start job are one statement instead. Idempotent with a caller's id: the same flow and
 * semantically equal input return the existing run; anything else is a FlowIdConflictError.
 */
export async function startFlow(deps: StarterDeps, flowName: string, input: unknown, options: StartOptions = {}): Promise<StartedFlow> {
  if (!deps.registry.get(flowName)) throw new UnknownFlowError(flowName, deps.registry.names());
  const id = options.id ?? randomUUID();
  const why = flowIdProblem(id);
  if (why) throw new FlowIdError(id, why);
  const inputJson = toJson(input ?? null);
  // One statement where the store carries jobs (the state and its start job together), else two: the start job
  // (the commit point), then the state. No read first: a repeated start finds the row at its insert; no clock
  // read: the row's created_at_utc (the database's) is the one loads report.
  const now = new Date(deps.clock.now()).toISOString();
  const startNonce = randomUUID();
  const state: FlowState = {
    schemaVersion: FLOW_STATE_SCHEMA_VERSION,
    revision: 0,
    flowId: id,
    flowName,
    inputJson,
    status: 'Running',
    createdAt: now,
    updatedAt: now,
    attempts: 0,
    steps: {},
    values: {},
    startNonce,
    ...(options.parent ? { parentFlowId: options.parent.flowId, parentStepName: options.parent.stepName } : {}),
    ...(options.context ? { context: options.context } : {}),
  };
  deps.store.validateCreate(state);
  const startJob = { id: startJobId(id), job: { kind: 'start', flowId: id, stateJson: serializeFlowState(state) } as const, delayMs: 0 };
  const carried = deps.store.carriesJobs ? deps.jobs.carried : undefined;
  if (carried) {
    // one statement: the run's row and its start job, both or neither (a repeated start inserts no second job)
    const row = carried.row(startJob);
    for (let attempt = 1; attempt <= CARRIED_START_ATTEMPTS; attempt++) {
      if (await deps.store.tryCreate(state, deps.stateExpiryMs, [row])) {
        carried.announce([row]);
        deps.metrics.runStarted(flowName);
        return { id, status: 'Running', created: true };
      }
      const stored = await deps.store.load(id);
      if (stored) return sameStart(stored, flowName, inputJson);
      // the live row it met expired or was deleted since: nothing of this start is written yet, so create again
    }
    throw new Error(`flow run '${id}' could not be started: its id's row kept appearing and vanishing (${CARRIED_START_ATTEMPTS} attempts)`);
  }
  await deps.jobs.publish(startJob);
  if (!(await deps.store.tryCreate(state, deps.stateExpiryMs))) {
    const stored = await deps.store.load(id);
    // written by this start's own job (a drain ran it first: it carries this very ledger), or by another start
    if (stored && stored.startNonce !== startNonce) return sameStart(stored, flowName, inputJson);
  }
  deps.metrics.runStarted(flowName);
  return { id, status: 'Running', created: true };
}

/** A carried create that met a live row which was gone at the read after it is tried again, this often in all. */
const CARRIED_START_ATTEMPTS = 3;

function sameStart(existing: FlowState, flowName: string, inputJson: string): StartedFlow {
  if (existing.flowName !== flowName) throw new FlowIdConflictError(existing.flowId, `it is a run of flow '${existing.flowName}'`);
  if (canonicalJson(existing.inputJson) !== canonicalJson(inputJson)) throw new FlowIdConflictError(existing.flowId, 'it was started with other input');
  return { id: existing.flowId, status: existing.status, created: false };
}
