// Pins the SQL Server channel statistics statement (GET /api/channel) and its row mapping. The channel
// statistics contract suite (test/contract/channel.stats.contract.test.ts) runs it for real with MSSQL_CONNECTION_STRING.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { SqlServerChannelStore } from '../../shared/stores/sqlserver/channel-store';
import { channelStats } from '../../shared/stores/sqlserver/channel-stats';
import { channelCatalogRecordsets, channelSpecCatalog, isChannelCatalog, isChannelDdl } from './sqlserver.channel-fakes';
import { FakePool } from './sqlserver.fakes';

describe('SQL Server channel statistics', () => {
  it('three COUNT_BIGs of unexpired rows, each filtered on expires_at alone (its index), no parameters, no JSON', () => {
    const names = channelNames('dbo', { recoveryTable: 'rec', messageTable: 'msg', subscriberTable: 'sub' }, 'sqlserver');
    const s = channelStats(names);
    expect(s.text).toBe(
      [
        'SELECT',
        '    (SELECT COUNT_BIG(*) FROM [dbo].[msg] WHERE expires_at > SYSUTCDATETIME()) AS stored_responses,',
        '    (SELECT COUNT_BIG(*) FROM [dbo].[sub] WHERE expires_at > SYSUTCDATETIME()) AS live_waiters,',
        '    (SELECT COUNT_BIG(*) FROM [dbo].[rec] WHERE expires_at > SYSUTCDATETIME()) AS registrations;',
      ].join('\n'),
    );
    expect(s.params).toEqual({});
    expect(s.text).not.toMatch(/JSON|envelope|state_json/i);
  });

  it('re-validates the names that reach the text', () => {
    const names = channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver');
    expect(() => channelStats({ ...names, messageTable: 'msg]; DROP TABLE x;--' })).toThrow();
  });

  it('maps the bigint counts tedious hands back as decimal strings to numbers', async () => {
    const names = channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver');
    const pool = new FakePool((call) => {
      if (isChannelCatalog(call)) return channelCatalogRecordsets(channelSpecCatalog(names));
      if (isChannelDdl(call)) return [];
      if (call.text.includes('AS stored_responses')) return [[{ stored_responses: '12', live_waiters: '3', registrations: '4000000000' }]];
      return [];
    });
    const store = new SqlServerChannelStore(pool.asPool(), { names, autoCreateSchema: true, logger: silentLogger });
    expect(await store.channelStats()).toEqual({ storedResponses: 12, liveWaiters: 3, registrations: 4_000_000_000 });
  });
});
