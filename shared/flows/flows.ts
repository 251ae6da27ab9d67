// The flows layer assembled: start, read, list and control runs, and the flows queue's job handler. It sits above
// the transport (its jobs) and the channel (awaited responses) and knows neither's tables: the engine hands it
// ports (shared/engine/flows-wiring.ts).

import type { Logger } from '../log';
import { systemClock, type FlowClock } from './clock';
import { FlowFailedError, FlowIdConflictError, FlowIdError, FlowRunNotFoundError, FlowStatusError, FlowStepNotFoundError } from './errors';
import { FlowEvents } from './events';
import { FlowExecutor } from './executor';
import { readFlowJob, wakeJobId, type FlowCarriedPublisher, type FlowJobQueue, type FlowPublisher } from './jobs';
import { noopFlowMetrics, type FlowMetrics } from './metrics';
import { mutateRun } from './mutate';
import { DEFAULT_FLOW_OPTIONS, type FlowOptions } from './options';
import { recoverResponse, type RecoveredResponse } from './recover';
import type { FlowRegistry } from './registry';
import type { FlowResponseChannel, FlowResponseWatch } from './responses';
import { isTerminal } from './retention';
import { startFlow, type StartedFlow, type StartOptions } from './starter';
import type { FlowState, FlowStatus } from './state';
import type { FlowListQuery, FlowStateStore, FlowSummary } from './store';

export interface FlowsDeps {
  store: FlowStateStore;
  registry: FlowRegistry;
  jobs: FlowJobQueue;
  responses: FlowResponseChannel;
  publish: FlowPublisher;
  /** An awaited step's request carried by its breadcrumb's write (stores that carry jobs); absent: published after it. */
  publishCarried?: FlowCarriedPublisher;
  logger: Logger;
  clock?: FlowClock;
  metrics?: FlowMetrics;
  options?: Partial<FlowOptions>;
  /** Between reads of a long-poll that waits for a run to end (a run ending here answers at once). Default 250. */
  endPollIntervalMs?: number;
}

export interface Flows {
  readonly registry: FlowRegistry;
  readonly options: Readonly<FlowOptions>;
  start(flowName: string, input: unknown, options?: Pick<StartOptions, 'id' | 'context'>): Promise<StartedFlow>;
  /** The run's ledger, or null (absent or expired). */
  get(flowId: string): Promise<FlowState | null>;
  list(query: FlowListQuery): Promise<{ items: FlowSummary[]; cursor?: string }>;
  countByStatus(): Promise<Record<FlowStatus, number>>;
  /** Until the run is Succeeded or Failed, or waitMs passed; the ledger as it then is (null: no such run). */
  waitForEnd(flowId: string, waitMs: number, signal?: AbortSignal): Promise<FlowState | null>;
  /** Running → Suspended: a running execution stops at its next checkpoint; wake-ups are acknowledged unrun. */
  suspend(flowId: string): Promise<FlowState>;
  /** Suspended → Running, and a wake-up. */
  resume(flowId: string): Promise<FlowState>;
  /** Running or Suspended → Failed (FlowCancelledError); its parent is woken. */
  cancel(flowId: string, reason?: string): Promise<FlowState>;
  /**
   * Failed (cancelled included) → Running from the named step: the steps recorded before it keep their results, it
   * and every step recorded after it are discarded (run again; an awaited step with a new correlation id), the
   * values and the attempt count are kept, and the run is woken. Refused for a Running, Suspended or Succeeded run
   * and for a step the run never reached (FlowStatusError, FlowStepNotFoundError).
   */
  restart(flowId: string, fromStep: string): Promise<FlowState>;
  /** The flows queue's job handler. */
  /** budgetEndsAt (epoch ms): the invocation's budget (JobContext.budgetEndsAt); an in-process wait ends by then. */
  handleJob(job: { id: string; payload: unknown }, log?: Logger, signal?: AbortSignal, budgetEndsAt?: number): Promise<void>;
  /** The channel's `flow` internal target. */
  recoverResponse(watch: FlowResponseWatch, response: RecoveredResponse): Promise<'woken' | 'kept' | 'stale'>;
}

export function createFlows(deps: FlowsDeps): Flows {
  const clock = deps.clock ?? systemClock;
  const metrics = deps.metrics ?? noopFlowMetrics;
  const options: FlowOptions = { ...DEFAULT_FLOW_OPTIONS, ...deps.options };
  const events = new FlowEvents();
  const { store, registry, jobs } = deps;
  const starter = { store, registry, jobs, clock, metrics, stateExpiryMs: options.stateExpiryMs };
  const executor: FlowExecutor = new FlowExecutor({
    store,
    clock,
    options,
    metrics,
    registry,
    jobs,
    events,
    logger: deps.logger,
    responses: deps.responses,
    publish: deps.publish,
    ...(deps.publishCarried && store.carriesJobs ? { publishCarried: deps.publishCarried } : {}),
    startChild: async (parent, stepName, flowName, input, childId) => {
      try {
        await startFlow(starter, flowName, input, { id: childId, parent: { flowId: parent.flowId, stepName }, ...(parent.context ? { context: parent.context } : {}) });
      } catch (err) {
        // retrying cannot help: the id belongs to another run, or the flow is unknown here
        if (err instanceof FlowIdConflictError || err instanceof FlowIdError) throw new FlowFailedError(`child '${stepName}': ${err.message}`);
        throw err;
      }
      return store.load(childId);
    },
  });
  const mutate = (flowId: string, change: (s: FlowState) => boolean) => mutateRun(store, clock, options.stateExpiryMs, flowId, change);
  const wake = (flowId: string, cause: string) => jobs.publish({ id: wakeJobId(flowId, cause), job: { kind: 'wake', flowId, reason: cause.split(':')[0]! }, delayMs: 0 });
  const found = <T>(flowId: string, r: T | null): T => {
    if (r === null) throw new FlowRunNotFoundError(flowId);
    return r;
  };

  return {
    registry,
    options,
    start: (flowName, input, o = {}) => startFlow(starter, flowName, input, o),
    get: (flowId) => store.load(flowId),
    list: (query) => store.list(query),
    countByStatus: () => store.countByStatus(),

    async waitForEnd(flowId, waitMs, signal) {
      const deadline = clock.now() + waitMs;
      for (;;) {
        const state = await store.load(flowId);
        if (!state || isTerminal(state) || clock.now() >= deadline || signal?.aborted) return state;
        const stop = new AbortController();
        const off = events.onEnded(flowId, () => stop.abort());
        const unlink = signal ? onceAbort(signal, () => stop.abort()) : () => undefined;
        await clock.sleep(Math.min(deps.endPollIntervalMs ?? 250, deadline - clock.now()), stop.signal).catch(() => undefined);
        off();
        unlink();
      }
    },

    async suspend(flowId) {
      let status: FlowStatus | undefined;
      const r = found(
        flowId,
        await mutate(flowId, (s) => {
          status = s.status;
          if (s.status !== 'Running') return false;
          s.status = 'Suspended';
          s.lastMessage = 'Suspended by an operator';
          return true;
        }),
      );
      if (!r.changed && status !== 'Suspended') throw new FlowStatusError(flowId, status!, 'suspended');
      return r.state;
    },

    async resume(flowId) {
      let status: FlowStatus | undefined;
      const r = found(
        flowId,
        await mutate(flowId, (s) => {
          status = s.status;
          if (s.status !== 'Suspended') return false;
          s.status = 'Running';
          s.lastMessage = 'Resumed by an operator';
          return true;
        }),
      );
      if (!r.changed && status !== 'Running') throw new FlowStatusError(flowId, status!, 'resumed');
      await wake(flowId, `resume:${r.state.revision}`);
      return r.state;
    },

    async cancel(flowId, reason = 'cancelled by an operator') {
      let status: FlowStatus | undefined;
      const r = found(
        flowId,
        await mutate(flowId, (s) => {
          status = s.status;
          if (isTerminal(s)) return false;
          s.status = 'Failed';
          s.error = { name: 'FlowCancelledError', message: reason };
          s.lastMessage = `Failed: ${reason}`;
          return true;
        }),
      );
      if (!r.changed) throw new FlowStatusError(flowId, status!, 'cancelled');
      metrics.runEnded(r.state.flowName, 'failed');
      events.ended(flowId);
      await executor.notifyParent(r.state);
      return r.state;
    },

    async restart(flowId, fromStep) {
      let status: FlowStatus | undefined;
      let known = true;
      const r = found(
        flowId,
        await mutate(flowId, (s) => {
          status = s.status;
          if (s.status !== 'Failed') return false;
          const names = Object.keys(s.steps);
          const at = names.indexOf(fromStep);
          if (at < 0) {
            known = false;
            return false;
          }
          // the ledger's step order is the order steps were first recorded in (JSON keeps insertion order)
          for (const n of names.slice(at)) delete s.steps[n];
          s.status = 'Running';
          s.restarts = (s.restarts ?? 0) + 1;
          delete s.error;
          delete s.resultJson;
          s.lastMessage = `Restarted from step '${fromStep}' by an operator`;
          return true;
        }),
      );
      if (!known) throw new FlowStepNotFoundError(flowId, fromStep);
      if (!r.changed) throw new FlowStatusError(flowId, status!, 'restarted');
      await wake(flowId, `restart:${r.state.revision}`);
      return r.state;
    },

    async handleJob(job, log = deps.logger, signal, budgetEndsAt) {
      const flowJob = readFlowJob(job.payload);
      if (!flowJob) throw new Error(`job ${job.id} on the flows queue is not a flow job (start or wake)`);
      await executor.handle(job.id, flowJob, log, signal, budgetEndsAt);
    },

    recoverResponse: (watch, response) => recoverResponse({ store, clock, jobs, stateExpiryMs: options.stateExpiryMs }, watch, response),
  };
}

function onceAbort(signal: AbortSignal, f: () => void): () => void {
  if (signal.aborted) {
    f();
    return () => undefined;
  }
  signal.addEventListener('abort', f, { once: true });
  return () => signal.removeEventListener('abort', f);
}

