// The flows layer on the engine's parts: its jobs go through the publisher onto the flows queue (drained like
// every queue), awaited steps register the channel's `flow` internal recovery target, and the callbacks queue
// hands routed responses to it. The flows layer itself (shared/flows) knows neither the transport nor the channel.

import type { ResponseChannel } from '../channel/response-channel';
import { createFlows, type Flows } from '../flows/flows';
import { DEFAULT_FLOWS_QUEUE, type FlowCarriedPublisher, type FlowJobQueue, type FlowPublisher } from '../flows/jobs';
import type { WakeSignal } from '../transport/wake';
import type { FlowMetrics } from '../flows/metrics';
import type { FlowOptions } from '../flows/options';
import type { FlowRegistry } from '../flows/registry';
import { FLOW_RESPONSE_TARGET, type FlowResponseWatch } from '../flows/responses';
import type { FlowStateStore } from '../flows/store';
import type { InternalTarget } from '../handlers/callback-sender';
import type { Logger } from '../log';
import type { Metrics } from '../telemetry/metrics';
import type { JobHandler } from '../transport/job';
import type { Publisher } from '../transport/publisher';
import type { TransportStore } from '../transport/types';
import type { QueuePolicy } from './policy';

export interface FlowsEngineOptions {
  /** The flows this engine runs (by name). */
  registry: FlowRegistry;
  /** The flow state store; default: the opened stores' `flows`. */
  store?: FlowStateStore;
  /** The queue executions travel on. Default `flows`. */
  queue?: string;
  /** Policy overrides of the flows queue (the engine's defaults otherwise). */
  policy?: Partial<QueuePolicy>;
  /** Lease, expiry and timer timings (shared/flows/options.ts). */
  timings?: Partial<FlowOptions>;
}

export interface FlowsWiring {
  flows: Flows;
  queue: string;
  handler: JobHandler;
  internalTargets: Record<string, InternalTarget>;
}

export function wireFlows(parts: {
  options: FlowsEngineOptions;
  store: FlowStateStore;
  /** The store is the opened stores' own, beside the engine's transport: its writes may carry jobs (flows/jobs.ts). */
  carriesJobs: boolean;
  publisher: Publisher;
  /** the flows queue's stale timer wake-ups are deleted through it */
  transport: Pick<TransportStore, 'cancel'>;
  channel: ResponseChannel;
  /** ctx.publish: the engine's publish (validation, queues) */
  publish: FlowPublisher;
  /** The engine's publish of a request carried by a flow-state write (only when the flow store is the opened stores' own). */
  publishCarried?: FlowCarriedPublisher;
  /** This process's drain wake-ups (a carried start job wakes the flows queue's drains as a publish does). */
  wake: WakeSignal;
  logger: Logger;
  metrics: Metrics;
}): FlowsWiring {
  const queue = parts.options.queue ?? DEFAULT_FLOWS_QUEUE;
  const m = parts.metrics;
  const metrics: FlowMetrics = {
    runStarted: (f) => m.flowRunStarted(f),
    runEnded: (f, o) => m.flowRunEnded(f, o),
    stepCompleted: (f, k, ms) => m.flowStepCompleted(f, k, ms),
    runParked: (f, on) => m.flowRunParked(f, on),
  };
  const flows = createFlows({
    store: parts.store,
    registry: parts.options.registry,
    logger: parts.logger,
    metrics,
    ...(parts.options.timings ? { options: parts.options.timings } : {}),
    jobs: {
      publish: async ({ id, job, delayMs }) => {
        const [outcome] = await parts.publisher.publish([{ id, queue, payloadJson: JSON.stringify(job), headers: {}, delayMs }]);
        if (outcome?.inserted) m.jobsPublished(queue, 1);
      },
      cancel: async (id) => {
        await parts.transport.cancel(queue, id, false);
      },
      ...(parts.carriesJobs ? { carried: carriedStartJobs(queue, parts.wake, m) } : {}),
    },
    responses: {
      watch: async (correlationId, watch, ttlMs) => {
        await parts.channel.registerInternal(correlationId, FLOW_RESPONSE_TARGET, watch, ttlMs);
      },
      listen: (correlationId, offer) => parts.channel.handOff(correlationId, offer),
      routeStored: (correlationId) => parts.channel.routeStored(correlationId),
    },
    publish: parts.publish,
    ...(parts.publishCarried && parts.carriesJobs ? { publishCarried: parts.publishCarried } : {}),
  });
  return {
    flows,
    queue,
    handler: async (job, ctx) => {
      await flows.handleJob(job, ctx.log, ctx.signal, ctx.budgetEndsAt);
      return undefined;
    },
    internalTargets: {
      [FLOW_RESPONSE_TARGET]: async (data, response) => flows.recoverResponse(data as FlowResponseWatch, response),
    },
  };
}

/**
 * The start job as the row the run's create carries (no NOTIFY when a drain of this process has room for the flows
 * queue: it is woken in process), and the announcement once that create committed.
 */
function carriedStartJobs(queue: string, wake: WakeSignal, m: Metrics): NonNullable<FlowJobQueue['carried']> {
  return {
    row: ({ id, job, delayMs }) => ({ id, queue, payloadJson: JSON.stringify(job), headersJson: '{}', delayMs, priority: 0, quiet: delayMs <= 0 && wake.claimsPromptly(queue) }),
    announce: (jobs) => {
      // a job whose id was already there was not inserted (CarriedJob.inserted): nothing new to wake for or count
      const inserted = jobs.filter((j) => j.inserted !== false);
      for (const j of inserted) if (j.delayMs <= 0) wake.notify(j.queue);
      if (inserted.length > 0) m.jobsPublished(queue, inserted.length);
    },
  };
}
