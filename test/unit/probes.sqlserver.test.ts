// The probe script's own logic (probes/sqlserver.ts): the connection string it derives for a scratch database, the
// scans it reads out of a showplan, and the summary and exit code it gives. The probes themselves need a server:
// `npm run probe:sqlserver` (the SQL Server workflow runs it).
import { describe, expect, it } from 'vitest';
import { scansIn, summarize, withDatabase, type ProbeResult } from '../../probes/sqlserver';

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
});
