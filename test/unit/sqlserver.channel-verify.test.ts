// Catalog verification of the SQL Server channel objects (spec §3.3–3.4): pure evaluation over catalog rows.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames } from '../../shared/sql/identifiers';
import {
  binaryCollationProblem,
  evaluateChannelCatalog,
  evaluateSequence,
  type ChannelCatalog,
  type ChannelCatalogColumnRow,
} from '../../shared/stores/sqlserver/channel-verify';
import { absentChannelCatalog, channelSpecCatalog, specSequence } from './sqlserver.channel-fakes';

const names = channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver');
const MSG = '[dbo].[asyncresponse_channel_messages]';
const REC = '[dbo].[asyncresponse_recovery_state]';
const SUB = '[dbo].[asyncresponse_channel_subscribers]';
const SEQ = '[dbo].[asyncresponse_channel_messages_ack_seq]';
const AUTO = { autoCreate: true };
const OPERATOR = { autoCreate: false };

function withColumn(
  catalog: ChannelCatalog,
  table: string,
  name: string,
  change: Partial<ChannelCatalogColumnRow> | null,
): ChannelCatalog {
  const columns = catalog.columns.flatMap((c) => (c.table_name === table && c.name === name ? (change ? [{ ...c, ...change }] : []) : [c]));
  return { ...catalog, columns };
}

describe('SQL Server channel catalog verification', () => {
  it('accepts exactly the documented objects on both paths', () => {
    for (const mode of [AUTO, OPERATOR]) {
      expect(evaluateChannelCatalog(channelSpecCatalog(names), names, mode)).toEqual({
        absent: [],
        problems: [],
        warnings: [],
        migration: null,
      });
    }
  });

  it('an enabled trigger on a channel table fails verification for that table only (OUTPUT without INTO, error 334)', () => {
    const catalog = { ...channelSpecCatalog(names), triggers: [{ table_name: names.messageTable, trigger_name: 'audit_msg' }] };
    const { problems } = evaluateChannelCatalog(catalog, names, OPERATOR);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.startsWith(`${MSG} has enabled trigger(s) [audit_msg]: `)).toBe(true);
  });

  it('rejects a case-insensitive correlation_id collation, naming the collation and BIN2', () => {
    for (const table of [names.recoveryTable, names.messageTable, names.subscriberTable]) {
      const ci = withColumn(channelSpecCatalog(names), table, 'correlation_id', { collation_name: 'SQL_Latin1_General_CP1_CI_AS' });
      const { problems } = evaluateChannelCatalog(ci, names, OPERATOR);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toContain(`column 'correlation_id' of [dbo].[${table}]`);
      expect(problems[0]).toContain('SQL_Latin1_General_CP1_CI_AS');
      expect(problems[0]).toContain('case-insensitive');
      expect(problems[0]).toContain('Latin1_General_100_BIN2');
      expect(problems[0]).toContain('or any _BIN2 collation'); // the fix names the accepted family too
    }
  });

  it('rejects a case-sensitive but linguistic collation as "not binary"; accepts _BIN2 variants', () => {
    const cs = withColumn(channelSpecCatalog(names), names.messageTable, 'correlation_id', { collation_name: 'Latin1_General_100_CS_AS' });
    const { problems } = evaluateChannelCatalog(cs, names, OPERATOR);
    expect(problems).toEqual([
      `column 'correlation_id' of ${MSG}: the collation Latin1_General_100_CS_AS is not binary, so correlation ids are not ` +
        'compared ordinally; expected a binary collation (COLLATE Latin1_General_100_BIN2, or any _BIN2 collation).',
    ]);
    for (const ok of ['Latin1_General_BIN2', 'Latin1_General_100_BIN2_UTF8', 'Japanese_XJIS_140_BIN2']) {
      expect(binaryCollationProblem('x', ok)).toBeNull();
    }
    expect(binaryCollationProblem('x', 'Latin1_General_CI_AI')).toMatch(/case-insensitive/);
    expect(binaryCollationProblem('x', null)).toBeNull();
  });

  it('refuses a _BIN (not _BIN2) correlation_id: the explicit BIN2 comparisons could not seek its index', () => {
    for (const table of [names.recoveryTable, names.messageTable, names.subscriberTable]) {
      for (const collation of ['Latin1_General_BIN', 'SQL_Latin1_General_CP437_BIN', 'Latin1_General_100_BIN']) {
        const bin = withColumn(channelSpecCatalog(names), table, 'correlation_id', { collation_name: collation });
        const { problems } = evaluateChannelCatalog(bin, names, OPERATOR);
        expect(problems, `${table} ${collation}`).toHaveLength(1);
        expect(problems[0]).toContain(`column 'correlation_id' of [dbo].[${table}]: the collation ${collation} is binary but not _BIN2`);
        expect(problems[0]).toContain('cannot be used for a seek');
        expect(problems[0]).toContain('ALTER COLUMN correlation_id nvarchar(400) COLLATE Latin1_General_100_BIN2 NOT NULL');
      }
    }
  });

  it('checks the compatibility level even when only the channel is used (its statements use OPENJSON)', () => {
    for (const mode of [AUTO, OPERATOR]) {
      const old = { ...channelSpecCatalog(names), database: [{ compatibility_level: 120 }] };
      const { problems } = evaluateChannelCatalog(old, names, mode);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/compatibility level is 120; .*OPENJSON, which needs 130 .*ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 130;/);
      for (const level of [130, 160]) {
        expect(evaluateChannelCatalog({ ...channelSpecCatalog(names), database: [{ compatibility_level: level }] }, names, mode).problems).toEqual([]);
      }
    }
  });

  it('rejects a reduced-scale datetime2, naming both renderings', () => {
    const reduced = withColumn(channelSpecCatalog(names), names.messageTable, 'acked_at', { scale: 3, precision: 23, max_length: 7 });
    expect(evaluateChannelCatalog(reduced, names, OPERATOR).problems).toEqual([
      `column 'acked_at' of ${MSG}: expected datetime2(7) NULL; found datetime2(3) NULL.`,
    ]);
    const created = withColumn(channelSpecCatalog(names), names.recoveryTable, 'registered_at', { scale: 0, precision: 19, max_length: 6 });
    expect(evaluateChannelCatalog(created, names, AUTO).problems[0]).toMatch(/expected datetime2\(7\) NOT NULL; found datetime2\(0\) NOT NULL/);
  });

  it('rejects wrong widths, types and nullability', () => {
    const narrow = withColumn(channelSpecCatalog(names), names.subscriberTable, 'correlation_id', { max_length: 400 });
    expect(evaluateChannelCatalog(narrow, names, OPERATOR).problems).toEqual([
      `column 'correlation_id' of ${SUB}: expected nvarchar(400) NOT NULL; found nvarchar(200) NOT NULL.`,
    ]);
    const intSeq = withColumn(channelSpecCatalog(names), names.messageTable, 'acked_seq', { type_name: 'int', max_length: 4 });
    expect(evaluateChannelCatalog(intSeq, names, OPERATOR).problems[0]).toMatch(/'acked_seq'.*expected bigint NULL; found int NULL/);
    const nullable = withColumn(channelSpecCatalog(names), names.recoveryTable, 'state_json', { is_nullable: true });
    expect(evaluateChannelCatalog(nullable, names, OPERATOR).problems[0]).toMatch(/'state_json' of .*expected nvarchar\(max\) NOT NULL; found nvarchar\(max\) NULL/);
  });

  it('checks the defaults case-insensitively and reports a missing one', () => {
    const upper = withColumn(channelSpecCatalog(names), names.messageTable, 'created_at', { default_definition: '(SYSUTCDATETIME())' });
    expect(evaluateChannelCatalog(upper, names, AUTO).problems).toEqual([]);
    const none = withColumn(channelSpecCatalog(names), names.messageTable, 'recovery_claimed', { default_object_id: 0, default_definition: null });
    expect(evaluateChannelCatalog(none, names, AUTO).problems).toEqual([
      `column 'recovery_claimed' of ${MSG} has no default; expected DEFAULT ((0)).`,
    ]);
    const hidden = withColumn(channelSpecCatalog(names), names.recoveryTable, 'registered_at', { default_definition: null });
    const result = evaluateChannelCatalog(hidden, names, OPERATOR);
    expect(result.problems).toEqual([]);
    expect(result.warnings[0]).toMatch(/registered_at.*not visible/);
  });

  it('extra columns pass unless NOT NULL without a default', () => {
    const base = channelSpecCatalog(names);
    const extra = { ...base.columns[0]!, table_name: names.subscriberTable, name: 'tenant', type_name: 'int', collation_name: null };
    expect(evaluateChannelCatalog({ ...base, columns: [...base.columns, { ...extra, is_nullable: true }] }, names, AUTO).problems).toEqual([]);
    expect(evaluateChannelCatalog({ ...base, columns: [...base.columns, extra] }, names, AUTO).problems[0]).toMatch(/'tenant' of .*515/);
  });

  it('checks primary keys by key columns', () => {
    const base = channelSpecCatalog(names);
    const noPk = { ...base, primaryKey: base.primaryKey.filter((k) => k.table_name !== names.subscriberTable) };
    expect(evaluateChannelCatalog(noPk, names, OPERATOR).problems).toEqual([
      `${SUB} has no primary key; expected PRIMARY KEY (correlation_id, registration_id).`,
    ]);
    const swapped = {
      ...base,
      primaryKey: base.primaryKey.map((k) =>
        k.table_name === names.recoveryTable ? { ...k, key_ordinal: k.column_name === 'correlation_id' ? 2 : 1 } : k,
      ),
    };
    expect(evaluateChannelCatalog(swapped, names, OPERATOR).problems).toEqual([
      `the primary key of ${REC} is on (registration_id, correlation_id); expected PRIMARY KEY (correlation_id, registration_id).`,
    ]);
  });

  it('the sequence must be bigint, INCREMENT BY 1, NO CYCLE, with the bigint maximum', () => {
    const check = (change: Parameters<typeof specSequence>[1]) =>
      evaluateChannelCatalog({ ...channelSpecCatalog(names), sequences: [specSequence(names, change)] }, names, AUTO).problems;
    expect(check({})).toEqual([]);
    expect(check({ increment: '2' })).toEqual([
      `the sequence ${SEQ} increments by 2; expected INCREMENT BY 1 (ALTER SEQUENCE ${SEQ} INCREMENT BY 1).`,
    ]);
    expect(check({ type_name: 'int', maximum_value: '2147483647' })).toEqual([
      expect.stringMatching(/is int; expected bigint/),
      expect.stringMatching(/has MAXVALUE 2147483647; expected the bigint maximum 9223372036854775807.*11728/),
    ]);
    expect(check({ maximum_value: '1000000' })[0]).toMatch(/MAXVALUE 1000000.*error 11728.*NO MAXVALUE/);
    expect(check({ is_cycling: true })[0]).toMatch(/is CYCLE; expected NO CYCLE/);
    expect(evaluateSequence(specSequence(names, { increment: '-1' }), SEQ)[0]).toMatch(/increments by -1/);
  });

  it('operator path: a message table without acked_seq or its sequence fails with the migration SQL', () => {
    const noColumn = withColumn(channelSpecCatalog(names), names.messageTable, 'acked_seq', null);
    const noSequence = { ...noColumn, sequences: [], objects: noColumn.objects.filter((o) => o.type !== 'SO') };
    const result = evaluateChannelCatalog(noSequence, names, OPERATOR);
    expect(result.problems).toEqual([]);
    expect(result.absent).toEqual([]);
    const migration = result.migration!;
    expect(migration).toContain(`the column acked_seq on ${MSG} and the sequence ${SEQ}`);
    expect(migration).toContain(
      [
        `IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'${MSG}', N'U') AND name = N'acked_seq')`,
        `    ALTER TABLE ${MSG} ADD acked_seq bigint NULL;`,
        `IF OBJECT_ID(N'${SEQ}', N'SO') IS NULL`,
        `    CREATE SEQUENCE ${SEQ} AS bigint START WITH 1;`,
      ].join('\n'),
    );
    expect(migration).not.toContain("missing the column 'acked_seq'");
    // only the sequence missing
    const onlySeq = evaluateChannelCatalog({ ...channelSpecCatalog(names), sequences: [] }, names, OPERATOR);
    expect(onlySeq.migration).toMatch(new RegExp(`needs the sequence \\[dbo\\]\\.\\[asyncresponse_channel_messages_ack_seq\\] \\(`));
    // after the store's own DDL an absent column or sequence is a plain failure
    const auto = evaluateChannelCatalog(noSequence, names, AUTO);
    expect(auto.migration).toBeNull();
    expect(auto.problems).toEqual([
      `${MSG} is missing the column 'acked_seq'; expected bigint NULL.`,
      `expected the sequence ${SEQ} to exist after schema creation, but it does not.`,
    ]);
  });

  it('absent objects: "absent" on the operator path, failures after schema creation', () => {
    const op = evaluateChannelCatalog(absentChannelCatalog, names, OPERATOR);
    expect(op).toEqual({ absent: [REC, MSG, SUB, SEQ], problems: [], warnings: [], migration: null });
    const auto = evaluateChannelCatalog(absentChannelCatalog, names, AUTO);
    expect(auto.problems).toEqual([
      `expected ${REC} to exist after schema creation, but it does not.`,
      `expected ${MSG} to exist after schema creation, but it does not.`,
      `expected ${SUB} to exist after schema creation, but it does not.`,
      `expected the sequence ${SEQ} to exist after schema creation, but it does not.`,
    ]);
    const partial = { ...channelSpecCatalog(names) };
    partial.columns = partial.columns.filter((c) => c.table_name !== names.subscriberTable);
    expect(evaluateChannelCatalog(partial, names, OPERATOR).absent).toEqual([SUB]);
  });

  it('a name held by another kind of object fails naming it', () => {
    const base = channelSpecCatalog(names);
    const view: ChannelCatalog = {
      ...base,
      columns: base.columns.filter((c) => c.table_name !== names.recoveryTable),
      objects: [
        ...base.objects.filter((o) => o.name !== names.recoveryTable),
        { name: names.recoveryTable.toUpperCase(), type: 'V ', type_desc: 'VIEW', is_target: false },
      ],
    };
    expect(evaluateChannelCatalog(view, names, OPERATOR).problems).toEqual([
      `expected ${REC} to be a user table, but the name is occupied by a view ([ASYNCRESPONSE_RECOVERY_STATE]).`,
    ]);
    const tableAsSequence: ChannelCatalog = {
      ...base,
      sequences: [],
      objects: [...base.objects.filter((o) => o.type !== 'SO'), { name: names.ackSequence, type: 'U ', type_desc: 'USER_TABLE', is_target: false }],
    };
    for (const mode of [AUTO, OPERATOR]) {
      expect(evaluateChannelCatalog(tableAsSequence, names, mode).problems).toEqual([
        `expected ${SEQ} to be a sequence, but the name is occupied by a user table ([asyncresponse_channel_messages_ack_seq]).`,
      ]);
    }
  });

  it('auto-created path: every declared index must exist on its table with its keys; the operator path ignores them', () => {
    const none = channelSpecCatalog(names, { indexes: false });
    expect(evaluateChannelCatalog(none, names, OPERATOR).problems).toEqual([]);
    expect(evaluateChannelCatalog(none, names, AUTO).problems).toEqual([
      `expected the index [asyncresponse_recovery_state_expires_idx] on ${REC} to exist after schema creation, but it does not.`,
      `expected the index [asyncresponse_channel_messages_correlation_created_idx] on ${MSG} to exist after schema creation, but it does not.`,
      `expected the index [asyncresponse_channel_messages_expires_idx] on ${MSG} to exist after schema creation, but it does not.`,
      `expected the index [asyncresponse_channel_subscribers_expires_idx] on ${SUB} to exist after schema creation, but it does not.`,
    ]);
    expect(evaluateChannelCatalog(none, names, { autoCreate: true, skipIndexes: true }).problems).toEqual([]);
    const base = channelSpecCatalog(names);
    const wrongKeys = {
      ...base,
      indexes: base.indexes.map((i) =>
        i.index_name === names.messageCorrelationCreatedIndex && i.column_name === 'created_at' ? { ...i, column_name: 'expires_at' } : i,
      ),
    };
    expect(evaluateChannelCatalog(wrongKeys, names, AUTO).problems).toEqual([
      `the index [asyncresponse_channel_messages_correlation_created_idx] on ${MSG} cannot serve the channel: it is keyed ` +
        '(correlation_id, expires_at); expected a plain index on (correlation_id, created_at). Drop it so the store recreates it, or rename it.',
    ]);
    const unique = { ...base, indexes: base.indexes.map((i) => (i.index_name === names.subscriberExpiresIndex ? { ...i, is_unique: true } : i)) };
    expect(evaluateChannelCatalog(unique, names, AUTO).problems[0]).toMatch(/it is UNIQUE/);
  });

  it('matches catalog names case-insensitively', () => {
    const base = channelSpecCatalog(names);
    const shouting: ChannelCatalog = {
      ...base,
      columns: base.columns.map((c) => ({ ...c, name: c.name.toUpperCase(), table_name: c.table_name.toUpperCase() })),
      primaryKey: base.primaryKey.map((k) => ({ ...k, column_name: k.column_name.toUpperCase(), table_name: k.table_name.toUpperCase() })),
      sequences: [specSequence(names, { name: names.ackSequence.toUpperCase() })],
    };
    expect(evaluateChannelCatalog(shouting, names, AUTO).problems).toEqual([]);
  });
});
