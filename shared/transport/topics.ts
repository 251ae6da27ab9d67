// Topics as configuration (spec 003): topic → its durable subscriptions. Each subscription's copies live on the
// worker queue `{topic}:{subscription}` (topic-names.ts), which has a route and policy like any other queue.
// These rules are checked at start-up (shared/settings/queues.ts) and by createEngine, with every other bad setting.

import { validateQueueName } from '../sql/identifiers';
import { SUBSCRIPTION_SEPARATOR, subscriptionQueue } from './topic-names';

/** The queue column's width (nvarchar(200)); a subscription queue name must fit it. */
export const MAX_QUEUE_NAME_LENGTH = 200;

/** topic → its subscriptions' names. */
export type TopicMap = Readonly<Record<string, readonly string[]>>;

/** Every subscription queue of the topics, topic by topic. */
export function subscriptionQueues(topics: TopicMap): string[] {
  return Object.entries(topics).flatMap(([topic, subs]) => subs.map((s) => subscriptionQueue(topic, s)));
}

/** A topic or subscription name: a queue name's rules, and no separator (`a:b` + `c` would clash with `a` + `b:c`). */
export function topicNameProblem(name: string): string | null {
  const why = validateQueueName(name);
  if (why) return why.replace('queue name', 'name');
  if (name.includes(SUBSCRIPTION_SEPARATOR)) return `name must not contain '${SUBSCRIPTION_SEPARATOR}' (it separates topic and subscription in the queue name)`;
  return null;
}

/**
 * Problems of a topic configuration: bad names, a subscription listed twice, a subscription queue over the queue
 * name limit or equal to another queue (`otherQueues`: the plain worker queues, the dead-letter and built-in ones).
 */
export function topicProblems(topics: TopicMap, otherQueues: readonly string[]): string[] {
  const problems: string[] = [];
  for (const [topic, subs] of Object.entries(topics)) {
    const why = topicNameProblem(topic);
    if (why) problems.push(`topic '${topic}': ${why}`);
    if (new Set(subs).size !== subs.length) problems.push(`topic '${topic}' lists a subscription twice`);
    for (const sub of subs) {
      const whySub = topicNameProblem(sub);
      if (whySub) problems.push(`topic '${topic}', subscription '${sub}': ${whySub}`);
      const queue = subscriptionQueue(topic, sub);
      if (queue.length > MAX_QUEUE_NAME_LENGTH) {
        problems.push(`topic '${topic}', subscription '${sub}': its queue name '${queue.slice(0, 60)}…' is ${queue.length} characters; at most ${MAX_QUEUE_NAME_LENGTH} are allowed`);
      }
      if (otherQueues.includes(queue)) problems.push(`topic '${topic}', subscription '${sub}': its queue '${queue}' is also a configured queue; rename one of them`);
    }
  }
  return problems;
}
