// What Core Tools reads from the app folder: local.settings.json (Values → environment, Host.LocalHttpPort)
// and host.json (extensions.http.routePrefix).
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { noteSettingSource } from '../shared/settings/slips';
import { HOST_QUEUE_DEFAULTS, type QueueTriggerSettings } from './queue-trigger';

export interface LocalSettings {
  /** Names copied into the environment (already-set variables are left alone). */
  applied: string[];
  /** Host.LocalHttpPort, when given. */
  port?: number;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`Cannot read ${file}: ${(err as Error).message}`);
  }
}

export function loadLocalSettings(dir: string, env: Record<string, string | undefined> = process.env): LocalSettings {
  const file = path.join(dir, 'local.settings.json');
  if (!existsSync(file)) return { applied: [] };
  const json = readJson(file) as { IsEncrypted?: boolean; Values?: Record<string, unknown>; Host?: { LocalHttpPort?: unknown } };
  if (json.IsEncrypted === true) throw new Error(`${file} is encrypted; the local host reads plain values only.`);
  const applied: string[] = [];
  for (const [name, value] of Object.entries(json.Values ?? {})) {
    noteSettingSource(name, 'local.settings.json'); // a misspelt name is warned about with its file
    if (env[name] !== undefined || value === null || value === undefined) continue;
    env[name] = typeof value === 'string' ? value : JSON.stringify(value);
    applied.push(name);
  }
  const port = Number(json.Host?.LocalHttpPort);
  return Number.isInteger(port) && port > 0 ? { applied, port } : { applied };
}

export function readRoutePrefix(dir: string): string {
  const file = path.join(dir, 'host.json');
  if (!existsSync(file)) return 'api';
  const json = readJson(file) as { extensions?: { http?: { routePrefix?: unknown } } };
  const prefix = json.extensions?.http?.routePrefix;
  return typeof prefix === 'string' ? prefix : 'api';
}

/** TimeSpan text (hh:mm:ss[.fff]) → ms. */
function timeSpanMs(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const m = typeof value === 'string' ? /^(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(value) : null;
  if (!m) throw new Error(`host.json extensions.queues.${name} must be a TimeSpan (hh:mm:ss), got ${JSON.stringify(value)}`);
  return Math.round((Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3])) * 1000);
}

/** host.json extensions.queues, over the host's defaults. */
export function readQueueSettings(dir: string): QueueTriggerSettings {
  const file = path.join(dir, 'host.json');
  if (!existsSync(file)) return { ...HOST_QUEUE_DEFAULTS };
  const q = ((readJson(file) as { extensions?: { queues?: Record<string, unknown> } }).extensions?.queues ?? {});
  const int = (name: string, def: number) => {
    const v = q[name];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Error(`host.json extensions.queues.${name} must be a whole number, got ${JSON.stringify(v)}`);
    return v;
  };
  const batchSize = int('batchSize', HOST_QUEUE_DEFAULTS.batchSize);
  const encoding = q.messageEncoding ?? HOST_QUEUE_DEFAULTS.messageEncoding;
  if (encoding !== 'base64' && encoding !== 'none') throw new Error(`host.json extensions.queues.messageEncoding must be base64 or none`);
  return {
    batchSize,
    newBatchThreshold: int('newBatchThreshold', Math.floor(batchSize / 2)),
    maxPollingIntervalMs: timeSpanMs(q.maxPollingInterval, 'maxPollingInterval') ?? HOST_QUEUE_DEFAULTS.maxPollingIntervalMs,
    visibilityTimeoutMs: timeSpanMs(q.visibilityTimeout, 'visibilityTimeout') ?? HOST_QUEUE_DEFAULTS.visibilityTimeoutMs,
    maxDequeueCount: int('maxDequeueCount', HOST_QUEUE_DEFAULTS.maxDequeueCount),
    messageEncoding: encoding,
  };
}
