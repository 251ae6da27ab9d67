// Every queue's route and policy: the global settings (settings/policy.ts) under the queue's own
// QUEUE__<key>__<SETTING> overrides (names: settings/per-queue.ts); the built-in `response` and `callbacks` take
// the policy settings only.

import type { QueuePolicy } from '../engine/policy';
import type { HandlerSpec } from '../handlers/registry';
import { CALLBACK_QUEUE, RESPONSE_QUEUE } from '../queue-names';
import type { Env, Readers } from './env';
import { findQueueSettings, type PerQueueSetting } from './per-queue';
import { LIMIT_SETTINGS, readLimits, type PolicyDefaults, type WorkerHandlerDefaults } from './policy';

/** A queue's handler as the settings describe it: `code` runs the handler registered in handlers/index.ts. */
export type HandlerSetting = HandlerSpec | { kind: 'code' } | { kind: 'built-in' };

export interface RouteConfig {
  handler: HandlerSetting;
  policy: QueuePolicy;
}

export interface LoadConfigOptions {
  /**
   * Queues with a registered in-code handler. A queue set to HANDLER=code without one is a problem; a queue with
   * one and no handler setting of its own (QUEUE__<key>__HANDLER or __FORWARD_URL) runs it.
   */
  codeHandlers?: readonly string[];
}

/** What a queue's route falls back to: the worker queues and the global settings. */
export type RouteDefaults = { queues: readonly string[] } & PolicyDefaults & WorkerHandlerDefaults;

/**
 * Every queue's route: a QUEUE__<key>__<SETTING> (read with the same rules as the global setting it overrides)
 * wins over that global setting. The handler follows the global rule too: HANDLER when set, else forward when the
 * queue has its own FORWARD_URL, else the global choice; a forward URL and timeout fall back to the global ones.
 */
export function readRoutes(c: RouteDefaults, env: Env, read: Readers, problems: string[], options: LoadConfigOptions): Record<string, RouteConfig> {
  const builtIn = [RESPONSE_QUEUE, CALLBACK_QUEUE];
  const found = findQueueSettings(env, [...c.queues, ...builtIn], problems);
  const routes: Record<string, RouteConfig> = {};
  for (const queue of [...c.queues, ...builtIn]) {
    const names = found.get(queue) ?? new Map<PerQueueSetting, string>();
    const name = (s: PerQueueSetting) => names.get(s);
    const num = (s: PerQueueSetting, def: number, o: { min?: number; max?: number; integer?: boolean }) => {
      const n = name(s);
      return n === undefined ? def : read.num(n, def, o);
    };
    const policy: QueuePolicy = {
      maxDeliveryAttempts: num('MAX_DELIVERY_ATTEMPTS', c.maxDeliveryAttempts, { max: 1000, integer: true }),
      redeliveryDelayMs: num('REDELIVERY_DELAY_SECONDS', c.redeliveryDelayMs / 1000, { max: 86400 }) * 1000,
      redeliveryMaxDelayMs: num('REDELIVERY_MAX_DELAY_SECONDS', c.redeliveryMaxDelayMs / 1000, { max: 86400 * 30 }) * 1000,
      lockTimeoutMs: num('LOCK_TIMEOUT_SECONDS', c.lockTimeoutMs / 1000, { min: 1, max: 3600 }) * 1000,
      batchSize: num('BATCH_SIZE', c.batchSize, { min: 1, max: 1000, integer: true }),
      prefetch: num('PREFETCH', c.prefetch, { min: 0, max: 5000, integer: true }),
      concurrency: num('HANDLER_CONCURRENCY', c.concurrency, { min: 1, max: 1000, integer: true }),
      deadLetter: name('DEAD_LETTER_ENABLED') === undefined ? c.deadLetterEnabled : read.bool(name('DEAD_LETTER_ENABLED')!, c.deadLetterEnabled),
      historyRetentionMs: num('JOB_HISTORY_RETENTION_DAYS', c.historyRetentionMs / 86_400_000, { max: 3650 }) * 86_400_000,
      ...readLimits(read.num, (key) => name(LIMIT_SETTINGS[key]), c, problems),
    };
    if ((name('REDELIVERY_DELAY_SECONDS') || name('REDELIVERY_MAX_DELAY_SECONDS')) && policy.redeliveryMaxDelayMs < policy.redeliveryDelayMs) {
      problems.push(`queue '${queue}': its redelivery delay cap (${policy.redeliveryMaxDelayMs / 1000} s) is below its redelivery delay (${policy.redeliveryDelayMs / 1000} s)`);
    }
    if (builtIn.includes(queue)) {
      for (const s of ['HANDLER', 'FORWARD_URL', 'FORWARD_TIMEOUT_SECONDS'] as const) {
        if (name(s)) problems.push(`${name(s)}: '${queue}' is a built-in queue; only its policy settings can be changed`);
      }
      routes[queue] = { handler: { kind: 'built-in' }, policy };
      continue;
    }
    routes[queue] = { handler: queueHandler(queue, c, name, read, problems, options), policy };
  }
  return routes;
}

function queueHandler(
  queue: string,
  c: RouteDefaults,
  name: (s: PerQueueSetting) => string | undefined,
  read: Readers,
  problems: string[],
  options: LoadConfigOptions,
): HandlerSetting {
  const urlName = name('FORWARD_URL');
  const url = urlName === undefined ? c.workerForwardUrl : read.str(urlName);
  if (urlName !== undefined && url !== undefined && !isHttpUrl(url)) problems.push(`${urlName}='${url}' is not an http(s) URL`);
  const timeoutName = name('FORWARD_TIMEOUT_SECONDS');
  const timeoutMs = timeoutName === undefined ? c.workerForwardTimeoutMs : read.num(timeoutName, c.workerForwardTimeoutMs / 1000, { min: 1, max: 600 }) * 1000;
  const kindName = name('HANDLER');
  // a handler registered under the queue's name is meant for it: it wins over the global WORKER_HANDLER, the
  // queue's own HANDLER or FORWARD_URL win over it (issue 27: it used to run echo without a word)
  const registered = options.codeHandlers?.includes(queue) === true;
  const kind = kindName === undefined ? (urlName !== undefined ? 'forward' : registered ? 'code' : c.workerHandler) : read.str(kindName)!;
  if (kind === 'forward') {
    if (url === undefined && kindName !== undefined) problems.push(`${kindName ?? 'WORKER_HANDLER'}=forward for queue '${queue}' needs ${urlName ?? 'a URL'} (QUEUE__<key>__FORWARD_URL or WORKER_FORWARD_URL)`);
    return { kind: 'forward', url: url ?? '', timeoutMs };
  }
  if (kind === 'code') {
    if (options.codeHandlers && !options.codeHandlers.includes(queue)) {
      problems.push(`${kindName}=code: no handler is registered for queue '${queue}' (add \`codeHandlers.register('${queue}', …)\` to handlers/index.ts)`);
    }
    return { kind: 'code' };
  }
  if (kind !== 'echo') problems.push(`${kindName}='${kind}' must be echo, forward or code`);
  return { kind: 'echo' };
}

function isHttpUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
