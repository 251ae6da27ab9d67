// The channel's read-only statistics statement (GET /api/channel, the dashboard). Three counts of unexpired rows,
// each a range over its table's expires_at index (no base-table lookups, no JSON).
// PostgreSQL twin: stores/postgres/channel-stats.ts.

import type { ChannelNames } from '../../channel/types';
import { qualifiedChannelNames } from './channel-statements';
import type { Statement } from './statements';

export function channelStats(names: ChannelNames): Statement<never> {
  const t = qualifiedChannelNames(names);
  return {
    text: [
      'SELECT',
      `    (SELECT COUNT_BIG(*) FROM ${t.messages} WHERE expires_at > SYSUTCDATETIME()) AS stored_responses,`,
      `    (SELECT COUNT_BIG(*) FROM ${t.subscribers} WHERE expires_at > SYSUTCDATETIME()) AS live_waiters,`,
      `    (SELECT COUNT_BIG(*) FROM ${t.recovery} WHERE expires_at > SYSUTCDATETIME()) AS registrations;`,
    ].join('\n'),
    params: {},
  };
}
