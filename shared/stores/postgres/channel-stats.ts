// PostgreSQL twin of stores/sqlserver/channel-stats.ts: three counts of unexpired rows over the expires_at indexes.

import type { ChannelNames } from '../../channel/types';
import { channelTables } from './channel-statements';

export function channelStatsQuery(n: ChannelNames): string {
  const { r, m, s } = channelTables(n);
  return `SELECT
  (SELECT count(*) FROM ${m} WHERE expires_at > now())::int AS stored_responses,
  (SELECT count(*) FROM ${s} WHERE expires_at > now())::int AS live_waiters,
  (SELECT count(*) FROM ${r} WHERE expires_at > now())::int AS registrations`;
}
