// Composition root: one pool shared by the transport and channel stores, one publisher, one wake signal,
// the response channel and the handler table, per process. Functions get it lazily (the first invocation
// opens the pool); the appTerminate hook closes it. Telemetry (shared/telemetry) is process-wide: started here
// (and when the app loads, functions/index.ts) only when APPLICATIONINSIGHTS_CONNECTION_STRING is set; then the
// stores are wrapped so every call is a SQL dependency, and `metrics` sends the custom metrics.

import { ResponseChannel } from './channel/response-channel';
import { workerResponseHooks } from './channel/worker-responses';
import { CALLBACK_QUEUE, loadConfig, RESPONSE_QUEUE, type AppConfig, type Env } from './config';
import { callbackDeadLetterHold, callbackRowHoldMs, callbackSender, MAX_CALLBACK_ROW_HOLD_MS } from './handlers/callback-sender';
import { buildHandlers } from './handlers/registry';
import { responseIngressHandler } from './handlers/response-ingress';
import { consoleLogger, safeLogger, type Logger } from './log';
import { openStores, type Stores } from './stores/open';
import { instrumentStores } from './telemetry/dependencies';
import type { Metrics } from './telemetry/metrics';
import { startTelemetry, type Telemetry } from './telemetry/setup';
import type { DispatchDeps } from './transport/dispatcher';
import type { JobHandler } from './transport/job';
import { Publisher } from './transport/publisher';
import type { TransportStore } from './transport/types';
import { WakeSignal } from './transport/wake';
import type { NotifyListener } from './stores/postgres/notify-listener';
import { channelNames, transportNames } from './sql/identifiers';

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
  /** The custom metrics (noopMetrics when telemetry is off). */
  metrics: Metrics;
  telemetry: Telemetry;
  /** PostgreSQL only: the LISTEN session that turns other processes' NOTIFYs into local wakes. */
  listener?: NotifyListener;
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

/** PostgreSQL: NOTIFYs from other processes wake this process's drain loops and waiters at once. */
async function startWakeListener(cfg: AppConfig, url: string, wake: WakeSignal, channel: ResponseChannel, logger: Logger): Promise<NotifyListener> {
  const { startNotifyListener } = await import('./stores/postgres/notify-listener');
  const { notifyPrefix } = await import('./stores/postgres/statements');
  const { channelNotifyPrefix } = await import('./stores/postgres/channel-statements');
  return startNotifyListener(
    url,
    {
      transport: { prefix: notifyPrefix(transportNames(cfg.schema, cfg.transportTable, 'postgres')), wake: (queue) => wake.notify(queue) },
      channel: { prefix: channelNotifyPrefix(channelNames(cfg.schema, cfg.channel, 'postgres')), wake: (id) => channel.local.notify(id) },
    },
    logger,
  );
}

/** Settings are read once per process; a bad setting fails loudly at the first function load. */
export function appConfig(env: Env = process.env): AppConfig {
  return (config ??= loadConfig(env));
}

export interface RuntimeOverrides {
  /** Tests: record metrics in memory (MemoryMetrics) instead of the telemetry's. */
  metrics?: Metrics;
}

/** The process's runtime, created by the first call (overrides apply only to that call). */
export function getRuntime(overrides: RuntimeOverrides = {}): Promise<Runtime> {
  runtime ??= (async () => {
    const stopping = stopper.signal; // captured now: a shutdown during start-up must still reach this runtime
    const cfg = appConfig();
    const logger = safeLogger(consoleLogger(cfg.logLevel));
    if (cfg.channel.callbackSigningSecretProblem) logger.error(cfg.channel.callbackSigningSecretProblem);
    const telemetry = startTelemetry(process.env);
    const metrics = overrides.metrics ?? telemetry.metrics;
    const stores = await instrumentStores(await openStores(cfg, logger), cfg.store, telemetry.dependencies);
    const wake = new WakeSignal();
    const publisher = new Publisher(stores.transport, wake, cfg.publish, logger);
    const channel = new ResponseChannel(stores.channel, wake, cfg.channel, logger, cfg.retry);
    const routes = new Map<string, QueueRoute>();
    const workerHooks = workerResponseHooks(channel, logger, metrics);
    for (const [queue, handler] of buildHandlers(cfg)) routes.set(queue, { handler, hooks: workerHooks });
    routes.set(RESPONSE_QUEUE, { handler: responseIngressHandler(channel, cfg.channel.correlationIdJsonPaths, metrics), hooks: {} });
    routes.set(CALLBACK_QUEUE, {
      handler: callbackSender(
        {
          allowedHosts: cfg.channel.callbackAllowedHosts,
          secret: cfg.channel.callbackSigningSecret,
          timeoutMs: cfg.channel.callbackTimeoutMs,
          holdMs: callbackRowHoldMs(cfg),
        },
        stores.channel,
      ),
      hooks: callbackDeadLetterHold(stores.channel, cfg.deadLetterRetentionMs ?? MAX_CALLBACK_ROW_HOLD_MS),
    });
    const listener = cfg.store.kind === 'postgres' ? await startWakeListener(cfg, cfg.store.url, wake, channel, logger) : undefined;
    return { config: cfg, store: stores.transport, stores, channel, publisher, wake, routes, logger, metrics, telemetry, listener, stopping, track };
  })().catch((err) => {
    runtime = undefined;
    throw err;
  });
  return runtime;
}

/**
 * Stops drains (they stop claiming, release what they have not started, finish what they started), waits for
 * them to settle, then closes the pool and exports buffered telemetry (metrics otherwise leave once a minute,
 * and an instance that scales in would lose the last minute). The next getRuntime() starts afresh (tests reuse
 * the process); telemetry keeps running.
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
    try {
      await rt?.listener?.close();
      await rt?.stores.close();
    } finally {
      await flushWithin(rt?.telemetry, FLUSH_TIMEOUT_MS);
    }
  }
}

// Azure gives the worker about 5 s after WorkerTerminate before it is killed: the flush must leave room to close.
const FLUSH_TIMEOUT_MS = 2000;

/** A flush must not hold up shutdown when the ingestion endpoint is slow or unreachable. */
async function flushWithin(telemetry: Telemetry | undefined, ms: number): Promise<void> {
  if (!telemetry?.enabled) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([telemetry.flush(), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
