import { problem, type HttpAnswer } from './problem';

/** A route's {topic} must be one of TOPICS, so a typo never drops messages silently. */
export function unknownTopic(config: { topics: Readonly<Record<string, readonly string[]>> }, topic: string | undefined): HttpAnswer | null {
  if (topic !== undefined && Object.hasOwn(config.topics, topic)) return null;
  const shown = topic === undefined ? '' : topic.length > 100 ? `${topic.slice(0, 100)}…` : topic;
  const known = Object.keys(config.topics);
  return problem(404, `topic '${shown}' is not configured; the topics are ${known.length > 0 ? known.join(', ') : '(none)'} (TOPICS)`);
}
