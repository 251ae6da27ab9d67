// Pins the shape of the T-SQL schedule statements (no SQL Server here; the T-SQL grammar check parses them too).

import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { schemaNames } from '../../shared/stores/schema-names';
import { scheduleStatements } from '../../shared/stores/sqlserver/schedule-statements';
import { sqlServerMigrations } from '../../shared/stores/sqlserver/migrations';
import { publishBatch } from '../../shared/stores/sqlserver/statements';
import { typeName } from '../support/sqlserver-statements';

const names = schemaNames(transportNames('dbo', 'jobs', 'sqlserver'), channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver');
const s = scheduleStatements(names);
const BIN2 = 'Latin1_General_100_BIN2';
const EXACT_NAME = `s.name = @name AND s.name + N'.' = @name + N'.' COLLATE ${BIN2}`;

describe('SQL Server schedule statement shapes', () => {
  it('names: the schedules table and its due index take the transport table as their base', () => {
    expect(names.schedulesTable).toBe('jobs_schedules');
    expect(names.schedulesDueIndex).toBe('jobs_schedules_due_idx');
  });

  it('version 8: the table (exact-compare name and target, slots and times in datetime2) and the due index, behind guards', () => {
    const v8 = sqlServerMigrations(names)[7]!;
    expect(v8).toMatchObject({ version: 8, name: 'schedules table' });
    const [table, index] = v8.statements;
    expect(table!.text).toContain("IF OBJECT_ID(N'[dbo].[jobs_schedules]', N'U') IS NULL");
    expect(table!.text).toContain(`name nvarchar(200) COLLATE ${BIN2} NOT NULL PRIMARY KEY,`);
    expect(table!.text).toContain(`target nvarchar(200) COLLATE ${BIN2} NOT NULL,`);
    expect(table!.text).toContain("target_kind varchar(10) NOT NULL CHECK (target_kind IN ('queue', 'topic')),");
    expect(table!.text).toContain('payload_json nvarchar(max) NOT NULL,');
    expect(table!.text).toContain('next_slot datetime2 NULL,');
    expect(table!.text).toContain('created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),');
    expect(index!.text).toContain('CREATE INDEX [jobs_schedules_due_idx] ON [dbo].[jobs_schedules] (paused, next_slot);');
  });

  it('upsert: locks the name first, replaces only a different definition (compared exactly), keeps the next slot when cron and zone stay', () => {
    const t = s.upsert.text;
    expect(t.startsWith('SET XACT_ABORT ON;')).toBe(true);
    expect(t).toContain(`IF EXISTS (SELECT 1 FROM [dbo].[jobs_schedules] AS s WITH (UPDLOCK, HOLDLOCK) WHERE ${EXACT_NAME})`);
    expect(t).toContain(`s.payload_json + N'.' = @payload_json + N'.' COLLATE ${BIN2}`);
    expect(t).toContain(`WHERE ${EXACT_NAME} AND NOT (`);
    expect(t).toContain('THEN s.next_slot ELSE @next_slot END');
    expect(t.indexOf('BEGIN TRANSACTION;')).toBeLessThan(t.indexOf('COMMIT TRANSACTION;'));
    expect(typeName(s.upsert, 'next_slot')).toBe('DateTime2');
    expect(typeName(s.upsert, 'payload_json')).toBe('NVarChar');
  });

  it('due: the clock, then TOP (@limit) unpaused rows by next slot (the due index order)', () => {
    expect(s.due.text).toBe(
      [
        'DECLARE @now datetime2 = SYSUTCDATETIME();',
        'SELECT @now AS now;',
        'SELECT TOP (@limit) name, target_kind, target, cron, time_zone, payload_json, headers_json, paused, misfire, catch_up_max, last_slot, next_slot, created_at, updated_at FROM [dbo].[jobs_schedules]',
        'WHERE paused = 0 AND next_slot <= @now',
        'ORDER BY next_slot;',
      ].join('\n'),
    );
  });

  it('a firing: the compare-and-set advance, then the transport publish only if it matched, in one transaction', () => {
    const t = s.fireToQueue.text;
    expect(t).toContain(`WHERE ${EXACT_NAME} AND s.next_slot = @expected_next AND s.paused = 0;`);
    expect(t).toContain('IF @@ROWCOUNT = 1 SET @advanced = 1;');
    const publish = publishBatch(names.transport).text.split('\n').map((l) => `    ${l}`).join('\n');
    expect(t).toContain(`IF @advanced = 1\nBEGIN\n${publish}\nEND\nCOMMIT TRANSACTION;`);
    expect(t.indexOf('UPDATE s SET last_slot')).toBeLessThan(t.indexOf('INSERT INTO [dbo].[jobs]'));
    expect(s.fireToTopic.text).toContain('FROM [dbo].[jobs_subscriptions] AS s');
    expect(s.advance.text).not.toContain('INSERT');
    for (const p of ['expected_next', 'last_slot', 'next_slot']) expect(typeName(s.fireToQueue, p)).toBe('DateTime2');
  });

  it('get, delete and pause match the name exactly; pause keeps the next slot, resume takes the fresh one', () => {
    for (const st of [s.get, s.delete, s.setPaused]) expect(st.text).toContain(EXACT_NAME);
    expect(s.setPaused.text).toContain('next_slot = CASE WHEN @paused = 1 THEN s.next_slot ELSE @next_slot END');
    expect(s.setPaused.text).toContain('OUTPUT inserted.name,');
    // OUTPUT INTO a table variable of the table's columns, then SELECT (review L4); the delete counts server-side (L5)
    expect(s.setPaused.text.startsWith(
      'DECLARE @changed TABLE (name nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL, target_kind varchar(10) NOT NULL, target nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL, ' +
        'cron nvarchar(200) NOT NULL, time_zone nvarchar(100) NOT NULL, payload_json nvarchar(max) NOT NULL, headers_json nvarchar(max) NOT NULL, paused bit NOT NULL, ' +
        'misfire varchar(10) NOT NULL, catch_up_max int NOT NULL, last_slot datetime2 NULL, next_slot datetime2 NULL, created_at datetime2 NOT NULL, updated_at datetime2 NOT NULL);',
    )).toBe(true);
    expect(s.setPaused.text).toContain(', inserted.updated_at INTO @changed\nFROM');
    expect(s.setPaused.text.endsWith('SELECT name, target_kind, target, cron, time_zone, payload_json, headers_json, paused, misfire, catch_up_max, last_slot, next_slot, created_at, updated_at FROM @changed;')).toBe(true);
    expect(s.delete.text.endsWith(';\nSELECT @@ROWCOUNT AS deleted;')).toBe(true);
    expect(s.list.text).toContain('ORDER BY name;');
  });
});
