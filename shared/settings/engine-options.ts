// AppConfig → createEngine's options (shared/index.ts): the one place the settings meet the engine.

import type { EngineOptions } from '../engine/options';
import type { HandlerRegistry } from '../handlers/registry';
import type { Logger } from '../log';
import { CALLBACK_QUEUE, RESPONSE_QUEUE } from '../queue-names';
import type { Metrics } from '../telemetry/metrics';
import { ConfigError } from './env';
import type { AppConfig } from './load';

/**
 * The engine's options for these settings (shared/index.ts createEngine): every queue's route as data, with the
 * in-code handlers taken from `handlers` (handlers/index.ts in the app) for queues set to HANDLER=code.
 */
export function engineOptions(
  c: AppConfig,
  parts: { store: EngineOptions['store']; handlers: Pick<HandlerRegistry, 'get'>; logger: Logger; metrics?: Metrics },
): EngineOptions {
  const queues: EngineOptions['queues'] = {};
  for (const queue of c.queues) {
    const r = c.routes[queue]!;
    const h = r.handler;
    if (h.kind === 'built-in') throw new Error(`queue '${queue}' cannot have a built-in handler`);
    const handler = h.kind === 'code' ? parts.handlers.get(queue) : h;
    if (handler === undefined) throw new ConfigError([`QUEUE__…__HANDLER=code: no handler is registered for queue '${queue}'`]);
    queues[queue] = { handler, policy: r.policy };
  }
  return {
    store: parts.store,
    schema: c.schema,
    transportTable: c.transportTable,
    autoCreateSchema: c.autoCreateSchema,
    durableClaimsAndAcks: c.durableClaimsAndAcks,
    queues,
    topics: c.topics,
    builtInPolicies: { response: c.routes[RESPONSE_QUEUE]?.policy, callbacks: c.routes[CALLBACK_QUEUE]?.policy },
    deadLetterQueue: c.deadLetterQueue,
    deadLetterRetentionMs: c.deadLetterRetentionMs,
    emptyPollDelayMs: c.emptyPollDelayMs,
    retry: c.retry,
    publishMaxAttempts: c.publish.maxAttempts,
    idGeneration: c.publish.idGeneration,
    maxMessageBytes: c.maxMessageBytes,
    channel: c.channel,
    logger: parts.logger,
    metrics: parts.metrics,
  };
}
