// Composition root: one engine per process (shared/index.ts: stores on one pool, publisher, wake signal, response
// channel and every queue's route), built from the app settings and the in-code handlers of handlers/index.ts.
// Functions get it lazily (the first invocation opens the pool); the appTerminate hook closes it. Telemetry
// (shared/telemetry) is process-wide: started here (and when the app loads, functions/index.ts) only when
// APPLICATIONINSIGHTS_CONNECTION_STRING is set; then the stores are wrapped so every call is a SQL dependency, and
// `metrics` sends the custom metrics.

import { appFlows } from '../flows';
import { codeHandlers } from '../handlers';
import type { ResponseChannel } from './channel/response-channel';
import { engineOptions, loadConfig, settingSlips, staticSchedules, type AppConfig, type Env } from './settings';
import { openDrainRequests } from './drain-requests/open';
import type { DrainRequestSender } from './drain-requests/sender';
import { createEngine, type Engine } from './engine/create-engine';
import { consoleLogger, safeLogger, type Logger } from './log';
import { applyStaticSchedules } from './schedules/static-schedules';
import { openStores, type Stores } from './stores/open';
import { instrumentStores } from './telemetry/dependencies';
import type { Metrics } from './telemetry/metrics';
import { startTelemetry, type Telemetry } from './telemetry/setup';
import type { Publisher } from './transport/publisher';
import type { TransportStore } from './transport/types';
import type { WakeSignal } from './transport/wake';

export interface Runtime {
  config: AppConfig;
  /** The engine every function uses (its store, channel, publisher and wake are repeated below for brevity). */
  engine: Engine;
  store: TransportStore;
  stores: Stores;
  channel: ResponseChannel;
  publisher: Publisher;
  wake: WakeSignal;
  logger: Logger;
  /** The custom metrics (noopMetrics when telemetry is off). */
  metrics: Metrics;
  telemetry: Telemetry;
  /** DRAIN_TRIGGER=queue: sends the drain requests (publishes announce through the engine; drains fan out). */
  drainRequests?: DrainRequestSender;
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

/**
 * Settings are read once per process; a bad setting (including a queue set to HANDLER=code without a registered
 * handler) fails loudly at the first function load.
 */
export function appConfig(env: Env = process.env): AppConfig {
  if (config) return config;
  config = loadConfig(env, { codeHandlers: codeHandlers.names() });
  // once per process, when the settings are read (at start-up: the function files read them as they load)
  const logger = consoleLogger(config.logLevel);
  for (const slip of settingSlips(Object.keys(env))) logger.warn(`setting: ${slip.message}`);
  return config;
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
    const fixedSchedules = staticSchedules(process.env); // a malformed SCHEDULES fails here, before a pool opens
    const telemetry = startTelemetry(process.env);
    const metrics = overrides.metrics ?? telemetry.metrics;
    const stores = await instrumentStores(await openStores(cfg, logger), cfg.store, telemetry.dependencies);
    const notifyUrl = cfg.store.kind === 'postgres' ? cfg.store.url : undefined;
    let engine: Engine;
    let drainRequests: DrainRequestSender | undefined;
    try {
      drainRequests = await openDrainRequests(cfg.drainRequests, process.env, logger);
      engine = await createEngine({ ...engineOptions(cfg, { store: { stores, notifyUrl }, handlers: codeHandlers, logger, metrics }), drainRequests, flows: { registry: appFlows } });
    } catch (err) {
      await stores.close();
      throw err;
    }
    const { store, channel, publisher, wake } = engine;
    // Queue mode: work already due when the instance starts (rows published from SQL or while no instance was up,
    // leases a crashed instance left) is announced now, not left for the safety-net timer; in the background, so
    // the first invocation does not wait for the probes.
    if (drainRequests) {
      track(engine.announcePending(logger)).then(
        (n) => n > 0 && logger.info(`start-up: asked for drains of ${n} queue(s) with work due or leased`),
        (err: unknown) => logger.warn('start-up: reading the queues for work already due failed (the safety-net timers drain it)', err),
      );
    }
    if (fixedSchedules.length > 0) {
      track(applyStaticSchedules(engine.schedules, fixedSchedules, logger)).then(
        (n) => logger.info(`start-up: applied ${n} of ${fixedSchedules.length} schedule(s) from SCHEDULES`),
        (err: unknown) => logger.error('start-up: applying SCHEDULES failed; the next start applies them again', err),
      );
    }
    return { config: cfg, engine, store, stores, channel, publisher, wake, logger, metrics, telemetry, drainRequests, stopping, track };
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
      await rt?.drainRequests?.settle(FLUSH_TIMEOUT_MS); // requests still being sent
      await rt?.engine.close(); // the LISTEN session, then the pool
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
