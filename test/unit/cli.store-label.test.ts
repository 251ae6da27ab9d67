import { describe, expect, it } from 'vitest';
import { storeLabel } from '../../shared/cli/store-label';

describe('npm run schema names the database it reads, without secrets', () => {
  it('PGlite, PostgreSQL and SQL Server (connection string or SQL_SERVER + SQL_DATABASE)', () => {
    expect(storeLabel({ kind: 'pglite', dataDir: '.data/pglite' })).toBe('PGlite at .data/pglite');
    const pg = storeLabel({ kind: 'postgres', url: 'postgres://app:s3cret@db.example.com:6432/orders' });
    expect(pg).toBe('PostgreSQL db.example.com:6432, database orders');
    const cs = storeLabel({ kind: 'sqlserver', connectionString: 'Server=tcp:sql1.database.windows.net,1433;Database=jobs;User Id=u;Password=p4ss' });
    expect(cs).toBe('SQL Server sql1.database.windows.net, database jobs');
    expect(storeLabel({ kind: 'sqlserver', server: 'sql2', database: 'db2' })).toBe('SQL Server sql2, database db2');
    for (const label of [pg, cs]) expect(label).not.toMatch(/s3cret|p4ss|app:/);
  });
});
