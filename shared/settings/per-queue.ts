// Per-queue app settings: QUEUE__<key>__<SETTING>, where <key> is the queue name with every character outside
// [A-Za-z0-9] replaced by `_` (Azure app settings on Linux allow letters, digits and underscores only), matched
// case-insensitively. `orders.eu-1` → QUEUE__orders_eu_1__MAX_DELIVERY_ATTEMPTS. A per-queue setting wins over
// the global one of the same meaning, which wins over the default.

/** Each per-queue setting and the global setting it overrides. */
export const PER_QUEUE_SETTINGS = {
  HANDLER: 'WORKER_HANDLER',
  FORWARD_URL: 'WORKER_FORWARD_URL',
  FORWARD_TIMEOUT_SECONDS: 'WORKER_FORWARD_TIMEOUT_SECONDS',
  HANDLER_CONCURRENCY: 'HANDLER_CONCURRENCY',
  BATCH_SIZE: 'BATCH_SIZE',
  PREFETCH: 'PREFETCH',
  MAX_DELIVERY_ATTEMPTS: 'MAX_DELIVERY_ATTEMPTS',
  REDELIVERY_DELAY_SECONDS: 'REDELIVERY_DELAY_SECONDS',
  REDELIVERY_MAX_DELAY_SECONDS: 'REDELIVERY_MAX_DELAY_SECONDS',
  LOCK_TIMEOUT_SECONDS: 'LOCK_TIMEOUT_SECONDS',
  DEAD_LETTER_ENABLED: 'DEAD_LETTER_ENABLED',
  JOB_HISTORY_RETENTION_DAYS: 'JOB_HISTORY_RETENTION_DAYS',
  CONCURRENCY_LIMIT: 'CONCURRENCY_LIMIT',
  RATE_LIMIT_PER_SECOND: 'RATE_LIMIT_PER_SECOND',
  RATE_LIMIT_BURST: 'RATE_LIMIT_BURST',
} as const;

export type PerQueueSetting = keyof typeof PER_QUEUE_SETTINGS;

export const QUEUE_SETTING_PREFIX = 'QUEUE__';
const NAMES = Object.keys(PER_QUEUE_SETTINGS).join('|');
/** A per-queue setting's name (the infra drift test and the docs use it too). */
export const QUEUE_SETTING_PATTERN = new RegExp(`^QUEUE__([A-Za-z0-9_]+)__(${NAMES})$`, 'i');

/** The <key> of a queue's settings (compare upper-cased: keys match case-insensitively). */
export function queueSettingKey(queue: string): string {
  return queue.replace(/[^A-Za-z0-9]/g, '_');
}

/** The full setting name of one queue's setting. */
export function queueSettingName(queue: string, setting: PerQueueSetting): string {
  return `${QUEUE_SETTING_PREFIX}${queueSettingKey(queue)}__${setting}`;
}

/** The per-queue settings present, by queue: setting → the environment name it was given under. */
export type QueueSettingNames = Map<string, Map<PerQueueSetting, string>>;

/**
 * Finds every QUEUE__… setting and assigns it to its queue. A name that is not a per-queue setting, a key that
 * is no queue's, a key two queues share, and a setting given twice (in different case) are problems.
 */
export function findQueueSettings(env: Record<string, string | undefined>, queues: readonly string[], problems: string[]): QueueSettingNames {
  const byKey = new Map<string, string[]>();
  for (const q of queues) {
    const key = queueSettingKey(q).toUpperCase();
    byKey.set(key, [...(byKey.get(key) ?? []), q]);
  }
  const found: QueueSettingNames = new Map();
  for (const name of Object.keys(env).sort()) {
    if (name.slice(0, QUEUE_SETTING_PREFIX.length).toUpperCase() !== QUEUE_SETTING_PREFIX) continue;
    if (env[name] === undefined || env[name]!.trim() === '') continue;
    const m = QUEUE_SETTING_PATTERN.exec(name);
    if (!m) {
      problems.push(`${name} is not a per-queue setting: use QUEUE__<queue key>__<SETTING> with SETTING one of ${Object.keys(PER_QUEUE_SETTINGS).join(', ')}`);
      continue;
    }
    const key = m[1]!.toUpperCase();
    const setting = m[2]!.toUpperCase() as PerQueueSetting;
    const owners = byKey.get(key);
    if (!owners) {
      const known = queues.map((q) => `${q} → ${queueSettingKey(q)}`).join(', ');
      problems.push(`${name} names no queue: '${m[1]}' is not the key of any queue (${known})`);
      continue;
    }
    if (owners.length > 1) {
      problems.push(`${name} is ambiguous: queues ${owners.map((q) => `'${q}'`).join(' and ')} share the key ${queueSettingKey(owners[0]!)}; rename one of them`);
      continue;
    }
    const queue = owners[0]!;
    const settings = found.get(queue) ?? new Map<PerQueueSetting, string>();
    const earlier = settings.get(setting);
    if (earlier !== undefined) {
      problems.push(`${name} and ${earlier} set the same setting of queue '${queue}'; keep one`);
      continue;
    }
    settings.set(setting, name);
    found.set(queue, settings);
  }
  return found;
}
