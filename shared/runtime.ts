// Composition root: one store, one publisher, one wake signal and the handler table per process. Functions
// get it lazily (the first invocation opens the pool); app hooks close it.

import { loadConfig, type AppConfig, type Env } from './config';
import { buildHandlers } from './handlers/registry';
import { consoleLogger, safeLogger, type Logger } from './log';
import { openTransportStore } from './stores/open';
import type { JobHandler } from './transport/job';
import { Publisher } from './transport/publisher';
import type { TransportStore } from './transport/types';
import { WakeSignal } from './transport/wake';

export interface Runtime {
  config: AppConfig;
  store: TransportStore;
  publisher: Publisher;
  wake: WakeSignal;
  handlers: Map<string, JobHandler>;
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
    const store = await openTransportStore(cfg, logger);
    const wake = new WakeSignal();
    return {
      config: cfg,
      store,
      wake,
      publisher: new Publisher(store, wake, cfg.publish, logger),
      handlers: buildHandlers(cfg),
      logger,
      stopping,
      track,
    };
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
    await rt?.store.close();
  }
}
