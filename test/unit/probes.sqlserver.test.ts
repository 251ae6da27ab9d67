// The probe script's own logic (probes/sqlserver.ts): the connection string it derives for a scratch database, the
// scans it reads out of a showplan, and the summary and exit code it gives. The probes themselves need a server:
// `npm run probe:sqlserver` (the SQL Server workflow runs it).
import { describe, expect, it } from 'vitest';
import { PROBE_SQL, scansIn, summarize, withDatabase, type ProbeResult } from '../../probes/sqlserver';

describe('probe:sqlserver helpers', () => {
  it('points a connection string at another database, whether it named one or not', () => {
    expect(withDatabase('Server=h,1433;Database=a;User Id=u', 'b')).toBe('Server=h,1433;Database=b;User Id=u');
    expect(withDatabase('Server=h;Initial Catalog=a;Encrypt=true', 'b')).toBe('Server=h;Database=b;Encrypt=true');
    expect(withDatabase('Server=h;User Id=u;', 'b')).toBe('Server=h;User Id=u;Database=b');
  });

  it("reads the scans of the product's tables out of a showplan, and only those", () => {
    const plan =
      '<ShowPlanXML><RelOp NodeId="1" PhysicalOp="Index Seek" LogicalOp="Index Seek"><IndexScan><Object Database="[d]" Schema="[s]" Table="[asyncresponse_transport_messages]" Index="[ready]"/></IndexScan></RelOp>' +
      '<RelOp NodeId="2" PhysicalOp="Table Scan" LogicalOp="Table Scan"><TableScan><Object Table="[@removed]"/></TableScan></RelOp>' +
      '<RelOp NodeId="3" PhysicalOp="Clustered Index Scan" LogicalOp="Clustered Index Scan"><IndexScan><Object Database="[d]" Schema="[s]" Table="[asyncresponse_transport_messages_keys]" Index="[pk]"/></IndexScan></RelOp></ShowPlanXML>';
    expect(scansIn(plan, 'asyncresponse_transport_messages')).toEqual(['Clustered Index Scan of asyncresponse_transport_messages_keys (pk)']);
  });

  it('exits 1 only when an assumption fails; not checked and information do not fail the run', () => {
    const r = (outcome: ProbeResult['outcome']): ProbeResult => ({ id: 'P1', finding: 'f', mode: 'm', outcome, saw: 's', assumes: 'a' });
    expect(summarize([r('holds'), r('not checked'), r('info')]).exitCode).toBe(0);
    const failed = summarize([r('holds'), r('fails')]);
    expect(failed.exitCode).toBe(1);
    expect(failed.text).toContain('2 probe runs: 1 hold, 1 fail, 0 not checked, 0 for information');
    expect(failed.text).toContain('P1 [m] f: FAILS');
  });

  it("pins the probes' own T-SQL: what each reads or writes, and only in the scratch schema or database", () => {
    const t = '[probe_x].[asyncresponse_transport_messages]';
    // the delayed backlog is filed as a delayed publish files it: scheduled (state 1), due in a day, @n rows of @queue
    expect(PROBE_SQL.insertDelayed(t)).toMatch(/INSERT INTO \[probe_x\]\.\[asyncresponse_transport_messages\] \(id, queue, payload_json, available_at, state\)\nSELECT TOP \(@n\) NEWID\(\), @queue, N'\{\}', DATEADD\(DAY, 1, SYSUTCDATETIME\(\)\), 1 FROM d3;$/);
    // 2^4 × 2^4 … rows available to TOP (@n): 16 × 16 = 256 per d2, 256² × 16 = 1,048,576 in d3
    expect(PROBE_SQL.insertDelayed(t).match(/CROSS JOIN d0 [a-f]/g)).toHaveLength(7);
    expect(PROBE_SQL.locksHeld()).toContain('WHERE request_session_id = @@SPID AND resource_database_id = DB_ID()');
    expect(PROBE_SQL.logicalReads()).toBe('SELECT logical_reads FROM sys.dm_exec_sessions WHERE session_id = @@SPID;');
    expect(PROBE_SQL.liveLeases(t)).toBe(`SELECT COUNT(*) AS n FROM ${t} WHERE queue = @queue AND lock_id IS NOT NULL AND locked_until > SYSUTCDATETIME();`);
    expect(PROBE_SQL.insertReady(t)).toBe(`INSERT INTO ${t} (id, queue, payload_json) VALUES (NEWID(), @queue, N'{}');`);
    expect(PROBE_SQL.twoKeyedPublishes('[s].[p]')).toBe(
      "DECLARE @j uniqueidentifier; BEGIN TRAN;\nEXEC [s].[p] @queue = @queue, @payload = N'1', @ordering_key = N'k', @message_id = @j OUTPUT;\n" +
        "EXEC [s].[p] @queue = @queue, @payload = N'2', @ordering_key = N'k', @message_id = @j OUTPUT;\nCOMMIT;",
    );
    expect(PROBE_SQL.logBytes()).toContain('WHERE transaction_id = CURRENT_TRANSACTION_ID() AND database_id = DB_ID()');
    // cleanup drops only what the scratch schema holds, then the schema
    const drop = PROBE_SQL.dropSchema('probe_x');
    expect(drop.match(/SCHEMA_ID\(N'probe_x'\)/g)).toHaveLength(3);
    expect(drop).toMatch(/EXEC \(N'DROP SCHEMA \[probe_x\]'\);$/);
    expect(PROBE_SQL.setRcsi('d_probe_1_rcsi_on', true)).toBe('ALTER DATABASE [d_probe_1_rcsi_on] SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE;');
    expect(PROBE_SQL.setRcsi('d_probe_1_rcsi_off', false)).toBe('ALTER DATABASE [d_probe_1_rcsi_off] SET READ_COMMITTED_SNAPSHOT OFF WITH ROLLBACK IMMEDIATE;');
  });
});
