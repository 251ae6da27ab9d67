import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildSqlServerConfig,
  createSqlServerPool,
  sqlCredential,
  parseServer,
  parseSqlConnectionString,
  type CredentialKind,
  type SqlServerConnectionOptions,
} from '../../shared/stores/sqlserver/connection';

const defaults: SqlServerConnectionOptions = { poolMax: 10, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 };

/** Records which credential the config asked for instead of creating a real one. */
function recordingCredentials() {
  const asked: Array<{ kind: CredentialKind; clientId?: string }> = [];
  const factory = (kind: CredentialKind, clientId?: string) => {
    asked.push({ kind, clientId });
    return { getToken: async () => null, kind, clientId } as never;
  };
  return { asked, factory };
}

describe('SQL Server connection strings', () => {
  it('parses the portal’s Entra form: tcp: prefix, port, Initial Catalog, Active Directory Default', () => {
    const parsed = parseSqlConnectionString(
      'Server=tcp:myserver.database.windows.net,1433;Initial Catalog=mydb;Persist Security Info=False;' +
        'MultipleActiveResultSets=False;Encrypt=True;TrustServerCertificate=False;Connection Timeout=30;' +
        'Authentication="Active Directory Default";',
    );
    expect(parsed).toEqual({
      server: 'myserver.database.windows.net',
      port: 1433,
      database: 'mydb',
      encrypt: true,
      trustServerCertificate: false,
      connectTimeoutMs: 30_000,
      authentication: 'entra-default',
      ignoredKeys: ['persist security info', 'multipleactiveresultsets'],
    });
  });

  it('parses the managed-identity form with the identity’s client id in User Id', () => {
    const parsed = parseSqlConnectionString(
      'Server=tcp:x.database.windows.net,1433;Database=db;Encrypt=True;Authentication=Active Directory Managed Identity;User Id=11111111-2222-3333-4444-555555555555',
    );
    expect(parsed.authentication).toBe('entra-managed-identity');
    expect(parsed.user).toBe('11111111-2222-3333-4444-555555555555');
    expect(parsed.database).toBe('db');
  });

  it('parses SQL authentication with quoted values, keys in any case and synonyms', () => {
    const parsed = parseSqlConnectionString(
      "data source=127.0.0.1,14330; DATABASE=asyncresponse; uid=sa; PWD=\"pa;ss\"\"word\"; trustservercertificate=yes; " +
        "Max Pool Size=25; Min Pool Size=2; Connect Timeout=5; Command Timeout=60; Application Name='my app'",
    );
    expect(parsed).toMatchObject({
      server: '127.0.0.1',
      port: 14330,
      database: 'asyncresponse',
      user: 'sa',
      password: 'pa;ss"word',
      trustServerCertificate: true,
      poolMax: 25,
      poolMin: 2,
      connectTimeoutMs: 5000,
      requestTimeoutMs: 60_000,
      applicationName: 'my app',
    });
    expect(parsed.authentication).toBeUndefined();
  });

  it('splits named instances and local aliases', () => {
    expect(parseServer('tcp:host\\SQLEXPRESS,1500')).toEqual({ server: 'host', instanceName: 'SQLEXPRESS', port: 1500 });
    expect(parseServer('(local)')).toEqual({ server: 'localhost' });
    expect(parseServer('Address.example')).toEqual({ server: 'Address.example' });
    expect(() => parseServer('np:\\\\.\\pipe\\sql')).toThrow(/named pipes/);
  });

  it('rejects what it cannot honour, saying why', () => {
    expect(() => parseSqlConnectionString('Server=x;Authentication=Active Directory Interactive')).toThrow(/not supported/);
    expect(() => parseSqlConnectionString('Server=x;Integrated Security=SSPI')).toThrow(/integrated security/i);
    expect(() => parseSqlConnectionString('Server=x;Initial Catalogue=db')).toThrow(/unknown key 'initial catalogue'/);
    expect(() => parseSqlConnectionString('Server=x;Encrypt=maybe')).toThrow(/Encrypt|encrypt/);
    expect(() => parseSqlConnectionString('Server=x;Password="open')).toThrow(/closing/);
    expect(() => parseSqlConnectionString('Server=x;junk')).toThrow(/no '='/);
  });

  it('builds a SQL-auth config when a password is given', () => {
    const { factory, asked } = recordingCredentials();
    const { config, authentication } = buildSqlServerConfig(
      { ...defaults, connectionString: 'Server=tcp:127.0.0.1,1433;Database=asyncresponse;User Id=sa;Password=Secret1!;TrustServerCertificate=True' },
      factory,
    );
    expect(authentication).toBe('sql');
    expect(asked).toEqual([]);
    expect(config).toMatchObject({
      server: '127.0.0.1',
      port: 1433,
      database: 'asyncresponse',
      user: 'sa',
      password: 'Secret1!',
      validateConnection: 'socket',
      connectionTimeout: 15_000,
      requestTimeout: 30_000,
      options: { encrypt: true, trustServerCertificate: true },
      pool: { max: 10, min: 0 },
    });
    expect(config.authentication).toBeUndefined();
  });

  it('builds a token-credential config for both Entra forms', () => {
    const { factory, asked } = recordingCredentials();
    const entra = buildSqlServerConfig(
      { ...defaults, connectionString: 'Server=tcp:x.database.windows.net,1433;Initial Catalog=db;Encrypt=True;Authentication=Active Directory Default' },
      factory,
    );
    expect(entra.authentication).toBe('entra-default');
    expect(entra.config.authentication?.type).toBe('token-credential');
    expect(entra.config.user).toBeUndefined();
    const mi = buildSqlServerConfig(
      { ...defaults, connectionString: 'Server=x.database.windows.net;Database=db;Authentication=Active Directory Managed Identity;User Id=abc' },
      factory,
    );
    expect(mi.authentication).toBe('entra-managed-identity');
    expect(mi.config.user).toBeUndefined();
    expect(asked).toEqual([
      { kind: 'default', clientId: undefined },
      { kind: 'managed-identity', clientId: 'abc' },
    ]);
  });

  it('without a connection string, server + database and no password means Entra with the configured client id', () => {
    const { factory, asked } = recordingCredentials();
    const { config, authentication } = buildSqlServerConfig(
      { ...defaults, server: 'tcp:x.database.windows.net,1433', database: 'db', clientId: 'cid' },
      factory,
    );
    expect(authentication).toBe('entra-default');
    expect(config.server).toBe('x.database.windows.net');
    expect(config.port).toBe(1433);
    expect(asked).toEqual([{ kind: 'default', clientId: 'cid' }]);
  });

  it('connection-string pool size and timeouts win over the option defaults', () => {
    const { config } = buildSqlServerConfig(
      { ...defaults, connectionString: 'Server=h;Database=d;User Id=u;Password=p;Max Pool Size=3;Connect Timeout=2' },
      recordingCredentials().factory,
    );
    expect(config.pool).toMatchObject({ max: 3, min: 0, acquireTimeoutMillis: 2000 });
    expect(config.connectionTimeout).toBe(2000);
  });

  it('a missing server or a password without a user is a configuration error', () => {
    expect(() => buildSqlServerConfig({ ...defaults, database: 'db' })).toThrow(/no server/);
    expect(() => buildSqlServerConfig({ ...defaults, connectionString: 'Server=h;Password=p' })).toThrow(/needs a user/);
  });

  it('creates an unconnected mssql pool from the config (it connects on first use)', async () => {
    const pool = createSqlServerPool({ ...defaults, connectionString: 'Server=127.0.0.1,1;Database=d;User Id=u;Password=p' });
    expect(pool.connected).toBe(false);
    expect((pool as unknown as { config: { validateConnection: unknown } }).config.validateConnection).toBe('socket');
    await pool.close();
  });

  it('shares one credential per identity across pools', () => {
    expect(sqlCredential('managed-identity', 'id-1')).toBe(sqlCredential('managed-identity', 'id-1'));
    expect(sqlCredential('managed-identity', 'id-1')).not.toBe(sqlCredential('managed-identity', 'id-2'));
  });

  it('the connection string documented in test/compose.yml parses to the container it starts', () => {
    const compose = readFileSync(join(__dirname, '..', 'compose.yml'), 'utf8');
    const documented = /MSSQL_CONNECTION_STRING='([^']+)'/.exec(compose)?.[1];
    const password = /MSSQL_SA_PASSWORD: "([^"]+)"/.exec(compose)?.[1];
    expect(documented).toBeDefined();
    expect(password, 'MSSQL_SA_PASSWORD in compose.yml').toMatch(/\S{8,}/);
    const parsed = parseSqlConnectionString(documented!);
    expect(parsed).toMatchObject({ server: '127.0.0.1', port: 1433, database: 'asyncresponse', user: 'sa', trustServerCertificate: true });
    expect(parsed.password).toBe(password);
  });
});
