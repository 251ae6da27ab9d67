// DRAIN_TRIGGER and the drain-request settings: what makes a drain run (storage-queue requests sent by the work
// itself, with slow safety-net timers; or today's frequent timers alone) and the timers' defaults in each mode.
import { STORAGE_CONNECTION, type DrainRequestConfig, type DrainTrigger } from '../drain-requests/options';
import type { Env } from '../env';
import type { Num, Str } from './env';

/** Whether the connection is configured at all (a connection string, a queue service URI or an account name). */
export function storageConfigured(env: Env, connection = STORAGE_CONNECTION): boolean {
  return Boolean(env[connection] || env[`${connection}__queueServiceUri`] || env[`${connection}__accountName`]);
}

/** In queue mode every timer fires in the same slot: overlapping executions share one billed period. */
export const QUEUE_MODE_SCHEDULE = '0 */5 * * * *';

export const DRAIN_REQUEST_SETTINGS = [
  { name: 'DRAIN_TRIGGER', default: 'auto', description: 'What runs the drains. `queue`: every publish (HTTP, batch, topic, response, callback, retry) sends a drain request on a storage queue of AzureWebJobsStorage (coalesced; delayed work gets a request that surfaces when due) and the drain-requested function drains, fanning out while a backlog lasts; the timers become a safety net every 5 minutes. `timer`: the timers alone, every 5–10 s. `auto`: queue when AzureWebJobsStorage is configured (`npm start` runs Azurite when it is not), else timer.' },
  { name: 'DRAIN_REQUEST_QUEUE', default: 'asyncresponse-drain', description: 'Storage queue of the drain requests (queue mode); its poison queue is `<name>-poison`. The Bicep creates it.' },
  { name: 'DRAIN_REQUEST_IDLE_GRACE_SECONDS', default: '1', description: 'A requested drain ends once its queue stayed empty this long; also each process\'s coalescing window (one request per queue per window).' },
  { name: 'DRAIN_FANOUT', default: '2', description: 'Requests a drain that stopped by its budget with work left sends, so more instances join (1–8).' },
  { name: 'DRAIN_FANOUT_MAX_PENDING', default: '32', description: 'While the request queue holds this many messages, a budget-stopped drain sends one continuation request instead of DRAIN_FANOUT.' },
] as const;

/** Storage queue names: 3–63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit. */
const QUEUE_NAME = /^[a-z0-9](?!.*--)[a-z0-9-]{1,54}[a-z0-9]$/;

export function loadDrainRequestConfig(env: Env, str: Str, num: Num, problems: string[]): DrainRequestConfig {
  const raw = (str('DRAIN_TRIGGER') ?? 'auto').toLowerCase();
  const connection = STORAGE_CONNECTION;
  let trigger: DrainTrigger;
  if (raw === 'auto') trigger = storageConfigured(env, connection) ? 'queue' : 'timer';
  else if (raw === 'queue' || raw === 'timer') trigger = raw;
  else {
    problems.push(`DRAIN_TRIGGER='${raw}' must be auto, queue or timer`);
    trigger = 'timer';
  }
  if (trigger === 'queue' && !storageConfigured(env, connection)) {
    problems.push(`DRAIN_TRIGGER=queue needs ${connection} (a connection string, or ${connection}__accountName / __queueServiceUri)`);
  }
  const queueName = str('DRAIN_REQUEST_QUEUE') ?? 'asyncresponse-drain';
  // 56 characters at most: the host names the poison queue `<name>-poison`, itself at most 63
  if (!QUEUE_NAME.test(queueName)) problems.push(`DRAIN_REQUEST_QUEUE='${queueName}' must be a storage queue name of 3 to 56 lower-case letters, digits and single hyphens`);
  return {
    trigger,
    queueName,
    connection,
    idleGraceMs: num('DRAIN_REQUEST_IDLE_GRACE_SECONDS', 1, { min: 0.1, max: 60 }) * 1000,
    fanOut: num('DRAIN_FANOUT', 2, { min: 1, max: 8, integer: true }),
    maxPending: num('DRAIN_FANOUT_MAX_PENDING', 32, { min: 1, max: 10_000, integer: true }),
  };
}
