import { describe, expect, it } from 'vitest';
import { parseArgs, printSchema } from '../../shared/cli/schema';

describe('npm run schema -- print', () => {
  it('prints the transport and channel DDL for SQL Server', () => {
    const sql = printSchema('sqlserver');
    expect(sql).toContain('[dbo].[asyncresponse_transport_messages]');
    expect(sql).toContain('asyncresponse_transport_messages_ready_idx');
    expect(sql).toContain('[asyncresponse_channel_messages_ack_seq]');
    expect(sql).toMatch(/correlation_id nvarchar\(400\) COLLATE Latin1_General_100_BIN2 NOT NULL/);
  });

  it('prints the PostgreSQL twins with a chosen schema and table', () => {
    const sql = printSchema('postgres', 'jobs', 'my_queue');
    expect(sql).toContain('"jobs"."my_queue"');
    expect(sql).toContain('"my_queue_ready_idx"');
    expect(sql).toContain('"jobs"."asyncresponse_channel_messages_ack_seq"');
    expect(sql).toContain('COLLATE "C"');
  });

  it('rejects an unknown dialect and bad names', () => {
    expect(() => printSchema('oracle')).toThrow(/--dialect/);
    expect(() => printSchema('postgres', 'bad-name')).toThrow(/simple identifier/);
  });

  it('parses its arguments', () => {
    expect(parseArgs(['print', '--dialect', 'postgres', '--schema=jobs'])).toEqual({ _: 'print', dialect: 'postgres', schema: 'jobs' });
  });
});
