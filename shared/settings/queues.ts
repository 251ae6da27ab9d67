// Which queues exist: QUEUES (the worker queues), TOPICS with their subscriptions (each one more worker queue
// `{topic}:{subscription}`) and DEAD_LETTER_QUEUE. The built-in `response`, `callbacks` (the response channel) and `flows` (durable-flow executions) are reserved.

import { DEFAULT_FLOWS_QUEUE } from '../flows/jobs';
import { CALLBACK_QUEUE, RESPONSE_QUEUE } from '../queue-names';
import { validateQueueName } from '../sql/identifiers';
import { subscriptionQueues, topicProblems, type TopicMap } from '../transport/topics';
import type { Env, Str } from './env';
import { loadTopics } from './topics';

const RESERVED_QUEUES = [RESPONSE_QUEUE, CALLBACK_QUEUE, DEFAULT_FLOWS_QUEUE];

export interface QueueSettings {
  /** The worker queues: QUEUES, then every topic subscription's queue (`{topic}:{subscription}`). */
  queues: string[];
  /** TOPICS with their TOPIC__<key>__SUBSCRIPTIONS. */
  topics: TopicMap;
  deadLetterQueue: string;
}

export function readQueues(env: Env, str: Str, problems: string[]): QueueSettings {
  const queues = (str('QUEUES') ?? 'worker').split(',').map((q) => q.trim()).filter((q) => q !== '');
  const deadLetterQueue = str('DEAD_LETTER_QUEUE') ?? 'deadletter';
  if (queues.length === 0) problems.push('QUEUES must name at least one queue');
  for (const q of [...queues, deadLetterQueue]) {
    const why = validateQueueName(q);
    if (why) problems.push(`queue '${q}': ${why}`);
  }
  if (queues.includes(deadLetterQueue)) problems.push(`QUEUES must not contain the dead-letter queue '${deadLetterQueue}'`);
  for (const reserved of RESERVED_QUEUES) {
    if (queues.includes(reserved)) {
      problems.push(`QUEUES must not contain '${reserved}': it is reserved for ${reserved === DEFAULT_FLOWS_QUEUE ? 'durable-flow executions' : 'the response channel'}`);
    }
  }
  if (new Set(queues).size !== queues.length) problems.push('QUEUES lists a queue twice');
  const topics = loadTopics(env, problems);
  problems.push(...topicProblems(topics, [...queues, deadLetterQueue, ...RESERVED_QUEUES]));
  return { queues: [...queues, ...subscriptionQueues(topics)], topics, deadLetterQueue };
}
