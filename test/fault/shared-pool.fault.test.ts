// Two stores sharing ONE raw mssql pool (as open.ts shares a pool between the transport and the channel): a
// refused login rebuilds that pool once, in place, and every user of the pool object carries on.

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openHandles } from '../../shared/stores/open-handles';
import { createSqlServerPool } from '../../shared/stores/sqlserver/connection';
import { existingPoolHolder, poolHolderFor } from '../../shared/stores/sqlserver/pool-guard';
import { connectPool, SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { FaultServer } from '../tds/fault-server';
import { capturingLogger, connectionTo, failover, faultScope, message, NAMES, publishingAnswer as answer, refusableLogins } from './harness';

const faults = faultScope();

describe('a pool shared by two stores (real tedious client)', () => {
  it('one in-place rebuild serves both stores; the pool object stays the same', async () => {
    const logins = refusableLogins();
    const server = new FaultServer({ onRequest: answer, onLogin: logins.onLogin });
    faults.closeAfter(() => server.close());
    const logger = capturingLogger();
    const pool = createSqlServerPool(connectionTo(await server.start()), logger);
    faults.closeAfter(() => pool.close());
    const options = { schema: NAMES.schema, table: NAMES.table, autoCreateSchema: false, logger };
    const a = new SqlServerTransportStore(pool, options, { ownsPool: false });
    const b = new SqlServerTransportStore(pool, options, { ownsPool: false });
    expect(a.poolHolder).toBe(b.poolHolder); // one holder per pool object
    await Promise.all([a.ensureSchema(), b.ensureSchema()]);

    await failover(server);
    logins.refuse(1);
    const [ra, rb] = await Promise.all([a.publish([message(randomUUID())]), b.publish([message(randomUUID())]), connectPool(pool)]);

    expect(ra[0]?.inserted).toBe(true);
    expect(rb[0]?.inserted).toBe(true);
    expect(poolHolderFor(pool).rebuilds).toBe(1);
    expect(a.poolHolder.current).toBe(pool);
    expect(pool.connected).toBe(true);
    expect(openHandles()).toContain('mssql pool'); // reconnected after the in-place close: tracked as open again

    await a.close();
    await b.close();
    expect(pool.connected).toBe(true); // neither store owns it
    await pool.close();
    expect(openHandles()).not.toContain('mssql pool');
    expect(existingPoolHolder(pool)).toBe(a.poolHolder);
  });
});
