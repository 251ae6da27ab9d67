// App settings (the environment) → the validated, typed AppConfig, one area at a time (each reader beside this
// file); every problem of every area is collected and thrown as one ConfigError. Every setting is listed in
// SETTINGS (catalog.ts); engine-options.ts turns the AppConfig into createEngine's options.

import type { ChannelConfig } from '../channel/options';
import type { DrainRequestConfig } from '../drain-requests/options';
import type { LogLevel } from '../log';
import { readChannel } from './channel';
import { loadDrainRequestConfig } from './drain-requests';
import { ConfigError, readers, type Env } from './env';
import { readPolicyDefaults, readWorkerHandler, type PolicyDefaults, type WorkerHandlerDefaults } from './policy';
import { readPublish, type PublishSettings } from './publish';
import { readQueues, type QueueSettings } from './queues';
import { readRoutes, type LoadConfigOptions, type RouteConfig } from './routes';
import { readStore, type StoreSettings } from './store';
import { checkInvocationFits, checkSchedules, readTimers, scheduleReader, type TimerSettings } from './timers';

export interface AppConfig
  extends Omit<StoreSettings, 'dialect'>,
    QueueSettings,
    PolicyDefaults,
    PublishSettings,
    TimerSettings,
    WorkerHandlerDefaults {
  /** DRAIN_TRIGGER and the drain requests (settings/drain-requests.ts). */
  drainRequests: DrainRequestConfig;
  logLevel: LogLevel;
  channel: ChannelConfig;
  /**
   * Route and policy of every queue a drain serves: the QUEUES (with their QUEUE__<key>__* overrides over the
   * global settings), then the built-in `response` and `callbacks` (policy overrides only).
   */
  routes: Record<string, RouteConfig>;
}

export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}): AppConfig {
  const problems: string[] = [];
  const read = readers(env, problems);
  const { dialect, ...store } = readStore(env, read, problems);
  const queues = readQueues(env, read.str, problems);
  const policy = readPolicyDefaults(read, problems);
  const publish = readPublish(read, problems);
  const drainRequests = loadDrainRequestConfig(env, read.str, read.num, problems);
  const queueMode = drainRequests.trigger === 'queue';
  const timers = readTimers(read, queueMode);
  const worker = readWorkerHandler(read, problems);
  const logLevel = (read.str('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel)) problems.push(`LOG_LEVEL='${logLevel}' is not a level`);

  const channel = readChannel(read, problems, dialect);
  if (queueMode) {
    const schedule = scheduleReader(read, queueMode);
    channel.drainResponsesSchedule = schedule('DRAIN_RESPONSES_SCHEDULE', '');
    channel.drainCallbacksSchedule = schedule('DRAIN_CALLBACKS_SCHEDULE', '');
    channel.sweepSchedule = schedule('SWEEP_CHANNEL_SCHEDULE', '');
  }
  const defaults = { ...queues, ...policy, ...worker };
  const routes = readRoutes(defaults, env, read, problems, options);
  const config: AppConfig = { ...store, ...defaults, ...publish, ...timers, drainRequests, logLevel: logLevel as LogLevel, channel, routes };

  const forwardTimeouts = Object.values(routes).map((r) => (r.handler.kind === 'forward' ? (r.handler.timeoutMs ?? 0) : 0));
  checkInvocationFits(config.drain.budgetMs, Math.max(config.workerForwardTimeoutMs, channel.callbackTimeoutMs, ...forwardTimeouts), problems);
  checkSchedules(
    [
      ['DRAIN_WORKER_SCHEDULE', config.drain.schedule],
      ['PRUNE_DEADLETTERS_SCHEDULE', config.pruneSchedule],
      ['QUEUE_METRICS_SCHEDULE', config.queueMetricsSchedule],
      ['DRAIN_RESPONSES_SCHEDULE', channel.drainResponsesSchedule],
      ['DRAIN_CALLBACKS_SCHEDULE', channel.drainCallbacksSchedule],
      ['SWEEP_CHANNEL_SCHEDULE', channel.sweepSchedule],
    ],
    problems,
  );
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
