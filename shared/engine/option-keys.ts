// Unknown keys in the engine options: a misspelled key (`policy: { maxDeliveryAtempts: 1 }`) would otherwise be
// ignored without a word and the default would run. Every level the options have is checked against the keys its
// type names; each problem gives the key's path and the nearest valid key (edit distance), then the valid keys.
// The HTTP API and the app settings already refuse unknown fields; this is the same rule for code.

import { DEFAULT_QUEUE_POLICY, LIMIT_RANGES } from './policy';

/** The keys of one level; `children` checks the value of a key (a nested level). */
interface Level {
  keys: readonly string[];
  children?: Readonly<Record<string, (value: unknown, path: string, problems: string[]) => void>>;
}

// the limits have no default (absent = no limit), so they are named apart
const POLICY_KEYS = [...Object.keys(DEFAULT_QUEUE_POLICY), ...Object.keys(LIMIT_RANGES)];
const POOL_KEYS = ['max', 'min', 'connectTimeoutMs', 'requestTimeoutMs'];
const BACKOFF_KEYS = ['baseMs', 'maxMs'];
const RETRY_KEYS = ['lock', 'throttling', 'failover', 'connection'];
/** ChannelConfig (shared/channel/options.ts). */
const CHANNEL_KEYS = [
  'recoveryTable',
  'messageTable',
  'subscriberTable',
  'messageRetentionMs',
  'deliveryConfirmationTimeoutMs',
  'deliveryConfirmationPollMs',
  'activePollIntervalMs',
  'heartbeatIntervalMs',
  'heartbeatTimeoutMs',
  'pruneIntervalMs',
  'recoveryStateExpiryMs',
  'maxRegistrationsPerCorrelationId',
  'maxWaitSeconds',
  'callbackAllowedHosts',
  'callbackSigningSecret',
  'callbackSigningSecretProblem',
  'callbackTimeoutMs',
  'correlationIdJsonPaths',
  'drainResponsesSchedule',
  'drainCallbacksSchedule',
  'sweepSchedule',
];
const STORE_KEYS: Readonly<Record<string, readonly string[]>> = {
  sqlserver: ['kind', 'connectionString', 'server', 'database', 'user', 'password', 'port', 'trustServerCertificate', 'pool', 'azureClientId'],
  postgres: ['kind', 'url', 'pool', 'azureClientId'],
  pglite: ['kind', 'dataDir', 'pool', 'azureClientId'],
};
const INJECTED_STORE_KEYS = ['stores', 'notifyUrl'];
const HANDLER_KEYS: Readonly<Record<string, readonly string[]>> = { echo: ['kind'], forward: ['kind', 'url', 'timeoutMs'] };
const TOP_KEYS = [
  'store',
  'schema',
  'transportTable',
  'autoCreateSchema',
  'durableClaimsAndAcks',
  'queues',
  'topics',
  'defaults',
  'builtInPolicies',
  'deadLetterQueue',
  'deadLetterRetentionMs',
  'emptyPollDelayMs',
  'retry',
  'publishMaxAttempts',
  'idGeneration',
  'maxMessageBytes',
  'channel',
  'logger',
  'metrics',
  'wake',
  'drainRequests',
  'flows',
];
const FLOW_TIMING_KEYS = ['leaseDurationMs', 'leaseRenewIntervalMs', 'stateExpiryMs', 'timerInProcessThresholdMs', 'defaultAwaitTimeoutMs', 'progressIntervalMs', 'awaitInProcessMs'];

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function check(value: unknown, path: string, level: Level, problems: string[]): void {
  if (!isPlainObject(value)) return; // a wrong type is the value checks' problem (or TypeScript's)
  for (const [key, v] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (!level.keys.includes(key)) {
      problems.push(unknownKeyProblem(at, key, level.keys));
      continue;
    }
    level.children?.[key]?.(v, at, problems);
  }
}

const flat =
  (keys: readonly string[]) =>
  (value: unknown, path: string, problems: string[]): void =>
    check(value, path, { keys }, problems);

const eachValue =
  (inner: (value: unknown, path: string, problems: string[]) => void) =>
  (value: unknown, path: string, problems: string[]): void => {
    if (!isPlainObject(value)) return;
    for (const [key, v] of Object.entries(value)) inner(v, `${path}.${key}`, problems);
  };

const policy = flat(POLICY_KEYS);

function store(value: unknown, path: string, problems: string[]): void {
  if (!isPlainObject(value)) return;
  if ('stores' in value) return check(value, path, { keys: INJECTED_STORE_KEYS }, problems);
  const keys = STORE_KEYS[String(value.kind)];
  if (!keys) return; // an unknown kind is reported where the store is opened
  check(value, path, { keys, children: { pool: flat(POOL_KEYS) } }, problems);
}

function handler(value: unknown, path: string, problems: string[]): void {
  if (!isPlainObject(value)) return; // a function (or a wrong type, which optionProblems reports)
  const keys = HANDLER_KEYS[String(value.kind)];
  if (keys) check(value, path, { keys }, problems);
}

const route = (value: unknown, path: string, problems: string[]): void =>
  check(value, path, { keys: ['handler', 'policy', 'respond'], children: { handler, policy } }, problems);

const TOP: Level = {
  keys: TOP_KEYS,
  children: {
    store,
    queues: eachValue(route),
    defaults: policy,
    builtInPolicies: (value, path, problems) => check(value, path, { keys: ['response', 'callbacks'], children: { response: policy, callbacks: policy } }, problems),
    retry: (value, path, problems) =>
      check(value, path, { keys: RETRY_KEYS, children: Object.fromEntries(RETRY_KEYS.map((k) => [k, flat(BACKOFF_KEYS)])) }, problems),
    channel: flat(CHANNEL_KEYS),
    wake: flat(['inProcess', 'notify']),
    flows: (value, path, problems) =>
      check(value, path, { keys: ['registry', 'store', 'queue', 'policy', 'timings'], children: { policy, timings: flat(FLOW_TIMING_KEYS) } }, problems),
  },
};

/** Every key of the options that their type does not name, one problem each (empty: none). */
export function unknownOptionKeys(options: unknown): string[] {
  const problems: string[] = [];
  check(options, '', TOP, problems);
  return problems;
}

/** Keys an option had under another name (the HTTP view and the settings once said handlerConcurrency). */
const RENAMED: Readonly<Record<string, string>> = { handlerConcurrency: 'concurrency' };

function unknownKeyProblem(path: string, key: string, valid: readonly string[]): string {
  const renamed = Object.hasOwn(RENAMED, key) && valid.includes(RENAMED[key]!) ? RENAMED[key] : undefined;
  const near = renamed ?? nearestKey(key, valid);
  return `${path} is not a known option${near ? ` (did you mean ${near}?)` : ''}; the valid keys there are ${valid.join(', ')}`;
}

/** The valid key nearest to `key` by edit distance (case-insensitive), if it is near enough to be a slip. */
export function nearestKey(key: string, valid: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of valid) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  // a slip or a renamed unit (lockTimeoutSeconds → lockTimeoutMs) yes; an unrelated word no
  return bestDistance <= Math.max(2, Math.ceil(key.length * 0.4)) ? best : undefined;
}

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}
