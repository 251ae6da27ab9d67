// Topic app settings: TOPICS=orders,invoices names the topics; TOPIC__<key>__SUBSCRIPTIONS=billing,shipping names a
// topic's durable subscriptions, <key> being the topic name with every character outside [A-Za-z0-9] replaced by
// `_` (as for QUEUE__<key>__…, Azure app settings on Linux allow letters, digits and underscores only), matched
// case-insensitively. A topic without the setting has no subscription: a publish to it is accepted and dropped.

import { queueSettingKey } from './per-queue';
import type { TopicMap } from '../transport/topics';

export const TOPIC_SETTING_PREFIX = 'TOPIC__';
/** A topic's subscriptions setting (the infra drift test and the docs use it too). */
export const TOPIC_SETTING_PATTERN = /^TOPIC__([A-Za-z0-9_]+)__SUBSCRIPTIONS$/i;

/** The full setting name of one topic's subscriptions. */
export function topicSettingName(topic: string): string {
  return `${TOPIC_SETTING_PREFIX}${queueSettingKey(topic)}__SUBSCRIPTIONS`;
}

const list = (value: string | undefined) => (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');

/**
 * The topics of TOPICS with the subscriptions of their TOPIC__<key>__SUBSCRIPTIONS. A name that is not a topic
 * setting, a key that is no topic's, a key two topics share, a setting given twice (in different case) and a
 * topic listed twice are problems; the names themselves are checked by topicProblems (transport/topics.ts).
 */
export function loadTopics(env: Record<string, string | undefined>, problems: string[]): TopicMap {
  const topics = list(env.TOPICS);
  if (new Set(topics).size !== topics.length) problems.push('TOPICS lists a topic twice');
  const byKey = new Map<string, string[]>();
  for (const t of new Set(topics)) {
    const key = queueSettingKey(t).toUpperCase();
    byKey.set(key, [...(byKey.get(key) ?? []), t]);
  }
  const found = new Map<string, string>();
  const result: Record<string, string[]> = Object.fromEntries(topics.map((t) => [t, []]));
  for (const name of Object.keys(env).sort()) {
    if (name.slice(0, TOPIC_SETTING_PREFIX.length).toUpperCase() !== TOPIC_SETTING_PREFIX) continue;
    if (env[name] === undefined || env[name]!.trim() === '') continue;
    const m = TOPIC_SETTING_PATTERN.exec(name);
    if (!m) {
      problems.push(`${name} is not a topic setting: use TOPIC__<topic key>__SUBSCRIPTIONS`);
      continue;
    }
    const owners = byKey.get(m[1]!.toUpperCase());
    if (!owners) {
      const known = topics.map((t) => `${t} → ${queueSettingKey(t)}`).join(', ');
      problems.push(`${name} names no topic: '${m[1]}' is not the key of any topic in TOPICS (${known || 'none'})`);
      continue;
    }
    if (owners.length > 1) {
      problems.push(`${name} is ambiguous: topics ${owners.map((t) => `'${t}'`).join(' and ')} share the key ${queueSettingKey(owners[0]!)}; rename one of them`);
      continue;
    }
    const topic = owners[0]!;
    const earlier = found.get(topic);
    if (earlier !== undefined) {
      problems.push(`${name} and ${earlier} set the subscriptions of topic '${topic}'; keep one`);
      continue;
    }
    found.set(topic, name);
    result[topic] = list(env[name]);
  }
  return result;
}
