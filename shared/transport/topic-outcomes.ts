// Groups the copies a topic publish statement reports into one outcome per message. A copy is matched to its
// message by recomputing topicCopyId in JS: the database computed the same id, so a mismatch would leave a copy
// unmatched, and that is an error rather than a silent miscount.

import { topicCopyId } from './topic-names';
import type { OutgoingMessage, TopicCopy, TopicPublishOutcome } from './types';

export interface ReportedCopy {
  id: string;
  queue: string;
  inserted: boolean;
  availableAt: Date | null;
}

export function topicOutcomes(messages: readonly OutgoingMessage[], reported: readonly ReportedCopy[]): TopicPublishOutcome[] {
  const byId = new Map<string, ReportedCopy>();
  for (const c of reported) {
    const id = c.id.toLowerCase();
    const seen = byId.get(id);
    // the SQL Server statement reports a new copy twice (inserted, then stored): inserted wins
    byId.set(id, seen ? { ...seen, inserted: seen.inserted || c.inserted, availableAt: seen.availableAt ?? c.availableAt } : { ...c, id });
  }
  const queues = [...new Set(reported.map((c) => c.queue))].sort();
  let matched = 0;
  const outcomes = messages.map((m) => {
    const id = m.id.toLowerCase();
    const copies: TopicCopy[] = [];
    for (const queue of queues) {
      const c = byId.get(topicCopyId(id, queue));
      if (c && c.queue === queue) {
        matched++;
        copies.push({ queue, id: c.id, inserted: c.inserted, availableAt: c.availableAt });
      }
    }
    return { id, copies };
  });
  if (matched !== byId.size) throw new Error(`topic publish: ${byId.size - matched} copy id(s) the database reported match no message's topicCopyId`);
  return outcomes;
}
