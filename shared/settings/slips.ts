// Near misses of the app's setting names (issue 27): `QUEUE=worker,billing` or `MAX_DELIVERY_ATTEMPT=3` used to
// start with the defaults without a word, while per-queue keys (QUEUE__<key>__…) were already strict. A name is a
// slip when it is not a setting this app reads but is close to one (edit distance, case), or carries one of the
// app's own prefixes (QUEUE_, DRAIN_, CALLBACK_…) without being a setting. Anything else (PATH, HOME, a user's own
// settings) is left alone: the environment holds many names that are none of the app's business.

import { editDistance } from '../engine/option-keys';
import { SETTINGS } from './catalog';

/** Names the local host and the Functions platform read (not in the catalog, which lists the app's settings). */
const HOST_NAMES = [
  'LOCAL_AZURITE',
  'LOCAL_AZURITE_LOCATION',
  'LOCAL_AZURITE_PORT',
  'LOCAL_FUNCTION_KEY',
  'LOCAL_HOST_ADDRESS',
  'LOCAL_INVOCATION_LOG',
  'LOCAL_TIMERS',
  'LOCAL_TIMER_LOG',
  'PORT',
  'AzureWebJobsStorage',
  'AzureWebJobsFeatureFlags',
  'FUNCTIONS_WORKER_RUNTIME',
  'FUNCTIONS_EXTENSION_VERSION',
  'APPLICATIONINSIGHTS_CONNECTION_STRING',
  'APPLICATIONINSIGHTS_AUTHENTICATION_STRING',
];

/** Prefixes only this app's settings use: an unknown name under one is a slip, not someone else's variable. */
const APP_PREFIXES = ['QUEUE_', 'TOPIC_', 'DRAIN_', 'CALLBACK_', 'WORKER_', 'DEAD_LETTER_', 'JOB_HISTORY_', 'REDELIVERY_', 'SQL_RETRY_', 'SQL_POOL_', 'LOCAL_AZURITE', 'CHANNEL_', 'SUBSCRIBER_'];

export interface SettingSlip {
  name: string;
  /** The setting it is probably meant to be. */
  suggestion?: string;
  /** One sentence: what is wrong and what to write. */
  message: string;
}

const known = (): string[] => [...SETTINGS.filter((s) => !s.pattern).map((s) => s.name), ...HOST_NAMES];

function nearest(name: string, names: readonly string[]): string | undefined {
  const upper = name.toUpperCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of names) {
    const d = editDistance(upper, candidate.toUpperCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  if (bestDistance === 0) return best; // another case: QUEUES is not queues on Linux
  // short names slip by one letter at most (PATH is not PORT); longer ones by two
  const allowed = name.length >= 10 ? 2 : name.length >= 5 ? 1 : 0;
  return bestDistance <= allowed ? best : undefined;
}

/** Where a name came from when not the process environment (the local host notes local.settings.json's keys). */
const sources = new Map<string, string>();

export function noteSettingSource(name: string, source: string): void {
  sources.set(name, source);
}

/**
 * The names among `names` that look like misspelt settings, with the setting each is probably meant to be.
 * Names with a double underscore (QUEUE__<key>__…, TOPIC__<key>__…) are left to their own strict readers.
 */
export function settingSlips(names: Iterable<string>): SettingSlip[] {
  const all = known();
  const exact = new Set(all);
  const patterns = SETTINGS.flatMap((s) => (s.pattern ? [s.pattern] : []));
  const slips: SettingSlip[] = [];
  for (const name of names) {
    if (exact.has(name) || patterns.some((p) => p.test(name)) || name.includes('__')) continue;
    const at = sources.has(name) ? ` (in ${sources.get(name)})` : '';
    const suggestion = nearest(name, all);
    if (suggestion) {
      slips.push({ name, suggestion, message: `${name}${at} is not a setting this app reads (did you mean ${suggestion}?); it is ignored` });
      continue;
    }
    const prefix = APP_PREFIXES.find((p) => name.toUpperCase().startsWith(p));
    if (prefix === undefined) continue;
    const perQueue = /^(QUEUE|TOPIC)_/i.test(name)
      ? '; per-queue and per-topic settings are QUEUE__<key>__<SETTING> and TOPIC__<key>__SUBSCRIPTIONS, with two underscores each side of the key'
      : '';
    const family = all.filter((n) => n.toUpperCase().startsWith(prefix)).join(', ');
    slips.push({ name, message: `${name}${at} is not a setting this app reads; it is ignored (the ${prefix}… settings are ${family || 'none'}${perQueue})` });
  }
  return slips;
}
