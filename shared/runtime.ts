// Composition root: one pool shared by the transport and channel stores, one publisher, one wake signal,
// the response channel and the handler table, per process. Functions get it lazily (the first invocation
// opens the pool); the appTerminate hook closes it.

import { ResponseChannel } from './channel/response-channel';
import { workerResponseHooks } from './channel/worker-responses';
import { CALLBACK_QUEUE, loadConfig, RESPONSE_QUEUE, type AppConfig, type Env } from './config';
import { callbackSender } from './handlers/callback-sender';
import { buildHandlers } from './handlers/registry';
import { responseIngressHandler } from './handlers/response-ingress';
import { consoleLogger, safeLogger, type Logger } from './log';
import { openStores, type Stores } from './stores/open';
import type { DispatchDeps } from './transport/dispatcher';
import type { JobHandler } from './transport/job';
import { Publisher } from './transport/publisher';
import type { TransportStore } from './transport/types';
import { WakeSignal } from './transport/wake';

export interface QueueRoute {
  handler: JobHandler;
  hooks: Pick<DispatchDeps, 'onCompleted' | 'onDeadLettered'>;
}

export interface Runtime {
  config: AppConfig;
  store: TransportStore;
  stores: Stores;
  channel: ResponseChannel;
  publisher: Publisher;
  wake: WakeSignal;
  /** Handler and settlement hooks of every queue a drain timer serves (worker queues, response, callbacks). */
  routes: Map<string, QueueRoute>;
  logger: Logger;
  /** Aborted at shutdown: drain loops stop claiming and hand back what they have not started. */
  stopping: AbortSignal;
  /** Registers work that must finish (settle its claims) before the pool closes at shutdown. */
  track<T>(work: Promise<T>): Promise<T>;
}

let config: AppConfig | undefined;
let runtime: Promise<Runtime> | undefined;
let stopper = new AbortController();
const activeWork = new Set<Promise<unknown>>();

function track<T>(work: Promise<T>): Promise<T> {
  const settled = work.then(
    () => undefined,
    () => undefined,
  );
  activeWork.add(settled);
  void settled.finally(() => activeWork.delete(settled));
  return work;
}

/** Settings are read once per process; a bad setting fails loudly at the first function load. */
export function appConfig(env: Env = process.env): AppConfig {
  return (config ??= loadConfig(env));
}

export function getRuntime(): Promise<Runtime> {
  runtime ??= (async () => {
    const stopping = stopper.signal; // captured now: a shutdown during start-up must still reach this runtime
    const cfg = appConfig();
    const logger = safeLogger(consoleLogger(cfg.logLevel));
    const stores = await openStores(cfg, logger);
    const wake = new WakeSignal();
    const publisher = new Publisher(stores.transport, wake, cfg.publish, logger);
    const channel = new ResponseChannel(stores.channel, publisher, cfg.channel, logger, cfg.retry);
    const routes = new Map<string, QueueRoute>();
    const workerHooks = workerResponseHooks(channel, logger);
    for (const [queue, handler] of buildHandlers(cfg)) routes.set(queue, { handler, hooks: workerHooks });
    routes.set(RESPONSE_QUEUE, { handler: responseIngressHandler(channel, cfg.channel.correlationIdJsonPaths), hooks: {} });
    routes.set(CALLBACK_QUEUE, {
      handler: callbackSender({ allowedHosts: cfg.channel.callbackAllowedHosts, secret: cfg.channel.callbackSigningSecret, timeoutMs: cfg.channel.callbackTimeoutMs }),
      hooks: {},
    });
    return { config: cfg, store: stores.transport, stores, channel, publisher, wake, routes, logger, stopping, track };
  })().catch((err) => {
    runtime = undefined;
    throw err;
  });
  return runtime;
}

/**
 * Stops drains (they stop claiming, release what they have not started, finish what they started), waits for
 * them to settle, then closes the pool. The next getRuntime() starts afresh (tests reuse the process).
 */
export async function shutdownRuntime(): Promise<void> {
  stopper.abort(new Error('shutting down'));
  while (activeWork.size > 0) await Promise.all([...activeWork]);
  const current = runtime;
  runtime = undefined;
  config = undefined;
  stopper = new AbortController();
  if (current) {
    const rt = await current.catch(() => undefined);
    await rt?.stores.close();
  }
}
