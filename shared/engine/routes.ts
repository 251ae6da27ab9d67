// Routes are data: each queue's handler, its settlement hooks and its policy travel together, built once when
// the engine is created. A drain reads the route it is given, never a global.

import type { ChannelStore } from '../channel/types';
import type { ResponseChannel } from '../channel/response-channel';
import { workerResponseHooks } from '../channel/worker-responses';
import type { ChannelConfig } from '../channel/options';
import { callbackDeadLetterHold, callbackRowHoldMs, callbackSender, MAX_CALLBACK_ROW_HOLD_MS, type InternalTarget } from '../handlers/callback-sender';
import { handlerFromSpec, DEFAULT_FORWARD_TIMEOUT_MS } from '../handlers/registry';
import { responseIngressHandler } from '../handlers/response-ingress';
import type { Logger } from '../log';
import { CALLBACK_QUEUE, RESPONSE_QUEUE } from '../queue-names';
import type { Metrics } from '../telemetry/metrics';
import type { DispatchDeps } from '../transport/dispatcher';
import type { JobHandler } from '../transport/job';
import type { EngineOptions } from './options';
import type { QueuePolicy } from './policy';
import { defaultBurst } from '../transport/limits';

/** What runs a queue's jobs, as shown to operators: never a URL's path, query or credentials. */
export type HandlerDescription =
  | { kind: 'echo' }
  | { kind: 'forward'; host: string; timeoutMs: number }
  | { kind: 'code' }
  | { kind: 'response-ingress' }
  | { kind: 'callbacks' }
  | { kind: 'flows' };

export interface QueueRoute {
  queue: string;
  handler: JobHandler;
  description: HandlerDescription;
  hooks: Pick<DispatchDeps, 'onCompleted' | 'onDeadLettered'>;
  policy: QueuePolicy;
}

export interface RouteParts {
  channel: ResponseChannel;
  channelStore: ChannelStore;
  channelConfig: ChannelConfig;
  defaults: QueuePolicy;
  logger: Logger;
  metrics: Metrics;
  /** Internal recovery targets the callbacks queue hands routed responses to (the flows layer's `flow`). */
  internalTargets?: Readonly<Record<string, InternalTarget>>;
}

/** The worker queues' routes from the options, then the built-in response ingress and callbacks routes. */
export function buildRoutes(options: EngineOptions, parts: RouteParts): Map<string, QueueRoute> {
  const routes = new Map<string, QueueRoute>();
  const respond = workerResponseHooks(parts.channel, parts.logger, parts.metrics);
  for (const [queue, r] of Object.entries(options.queues)) {
    const handler = typeof r.handler === 'function' ? r.handler : handlerFromSpec(r.handler);
    const description: HandlerDescription =
      typeof r.handler === 'function'
        ? { kind: 'code' }
        : r.handler.kind === 'forward'
          ? { kind: 'forward', host: new URL(r.handler.url).host, timeoutMs: r.handler.timeoutMs ?? DEFAULT_FORWARD_TIMEOUT_MS }
          : { kind: 'echo' };
    routes.set(queue, { queue, handler, description, hooks: r.respond === false ? {} : respond, policy: { ...parts.defaults, ...r.policy } });
  }
  const c = parts.channelConfig;
  routes.set(RESPONSE_QUEUE, {
    queue: RESPONSE_QUEUE,
    handler: responseIngressHandler(parts.channel, c.correlationIdJsonPaths, parts.metrics),
    description: { kind: 'response-ingress' },
    hooks: {},
    policy: { ...parts.defaults, ...options.builtInPolicies?.response },
  });
  const callbacksPolicy = { ...parts.defaults, ...options.builtInPolicies?.callbacks };
  const holdMs = callbackRowHoldMs({ ...callbacksPolicy, channel: c });
  routes.set(CALLBACK_QUEUE, {
    queue: CALLBACK_QUEUE,
    handler: callbackSender(
      { allowedHosts: c.callbackAllowedHosts, secret: c.callbackSigningSecret, timeoutMs: c.callbackTimeoutMs, holdMs },
      parts.channelStore,
      fetch,
      parts.internalTargets,
    ),
    description: { kind: 'callbacks' },
    // A dead-lettered callback keeps its response row as long as dead letters are kept, so a requeue still sends it.
    hooks: callbackDeadLetterHold(parts.channelStore, options.deadLetterRetentionMs ?? MAX_CALLBACK_ROW_HOLD_MS),
    policy: callbacksPolicy,
  });
  return routes;
}

/** A route as GET /api/queues/{queue} shows it (seconds, as the settings are written). */
export interface RouteView {
  handler: HandlerDescription['kind'];
  forwardHost?: string;
  forwardTimeoutSeconds?: number;
}

export interface PolicyView {
  maxDeliveryAttempts: number;
  redeliveryDelaySeconds: number;
  redeliveryMaxDelaySeconds: number;
  lockTimeoutSeconds: number;
  batchSize: number;
  prefetch: number;
  /** Handlers running at once per drain (HANDLER_CONCURRENCY; `concurrency` in the policy). */
  concurrency: number;
  deadLetter: boolean;
  /** Jobs running at once across every instance (CONCURRENCY_LIMIT); null = no limit. */
  concurrencyLimit: number | null;
  /** Starts per second across every instance (RATE_LIMIT_PER_SECOND) and the bucket size; null = no limit. */
  rateLimitPerSecond: number | null;
  rateLimitBurst: number | null;
}

export function routeView(route: QueueRoute): { route: RouteView; policy: PolicyView } {
  const d = route.description;
  const p = route.policy;
  return {
    route: d.kind === 'forward' ? { handler: d.kind, forwardHost: d.host, forwardTimeoutSeconds: d.timeoutMs / 1000 } : { handler: d.kind },
    policy: {
      maxDeliveryAttempts: p.maxDeliveryAttempts,
      redeliveryDelaySeconds: p.redeliveryDelayMs / 1000,
      redeliveryMaxDelaySeconds: p.redeliveryMaxDelayMs / 1000,
      lockTimeoutSeconds: p.lockTimeoutMs / 1000,
      batchSize: p.batchSize,
      prefetch: p.prefetch,
      concurrency: p.concurrency,
      deadLetter: p.deadLetter,
      concurrencyLimit: p.concurrencyLimit ?? null,
      rateLimitPerSecond: p.rateLimitPerSecond ?? null,
      rateLimitBurst: p.rateLimitPerSecond === undefined ? null : (p.rateLimitBurst ?? defaultBurst(p.rateLimitPerSecond)),
    },
  };
}
