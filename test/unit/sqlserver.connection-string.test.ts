import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  buildSqlServerConfig,
  createSqlServerPool,
  credentialPlan,
  parseAuthentication,
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
    // the app's own identity, directly (the same ManagedIdentityCredential the 'default' kind made before)
    expect(asked).toEqual([{ kind: 'managed-identity', clientId: 'cid' }]);
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

  // Every spelling SqlClient's TryConvertToAuthenticationType accepts: the spaced name or the enum name, any case,
  // surrounding blanks trimmed (dotnet/SqlClient DbConnectionStringCommon.cs).
  const FORMS: Array<[string, string]> = [
    ['Sql Password', 'sql'],
    ['SqlPassword', 'sql'],
    ['Active Directory Default', 'entra-default'],
    ['ActiveDirectoryDefault', 'entra-default'],
    ['activedirectorydefault', 'entra-default'],
    ['Active Directory Managed Identity', 'entra-managed-identity'],
    ['ActiveDirectoryManagedIdentity', 'entra-managed-identity'],
    ['ACTIVE DIRECTORY MANAGED IDENTITY', 'entra-managed-identity'],
    ['Active Directory MSI', 'entra-managed-identity'],
    ['ActiveDirectoryMSI', 'entra-managed-identity'],
    ['Active Directory Workload Identity', 'entra-workload-identity'],
    ['ActiveDirectoryWorkloadIdentity', 'entra-workload-identity'],
  ];

  it.each(FORMS)('Authentication=%s is accepted (bare, quoted and padded)', (form, mode) => {
    expect(parseAuthentication(form)).toBe(mode);
    expect(parseSqlConnectionString(`Server=x;Authentication=${form}`).authentication).toBe(mode);
    expect(parseSqlConnectionString(`Server=x;Authentication="  ${form} "`).authentication).toBe(mode);
  });

  it('Service Connector’s managed-identity string builds the user-assigned identity’s credential', () => {
    const { factory, asked } = recordingCredentials();
    const { authentication, config } = buildSqlServerConfig(
      {
        ...defaults,
        connectionString:
          'Data Source=srv.database.windows.net,1433;Initial Catalog=db;User ID=0f5e1a2b-0000-4000-8000-000000000001;' +
          'Authentication=ActiveDirectoryManagedIdentity',
      },
      factory,
    );
    expect(authentication).toBe('entra-managed-identity');
    expect(config.authentication?.type).toBe('token-credential');
    expect(asked).toEqual([{ kind: 'managed-identity', clientId: '0f5e1a2b-0000-4000-8000-000000000001' }]);
  });

  it('User Id means the identity’s client id under every Entra mode, as in SqlClient', () => {
    const cases: Array<[string, { kind: CredentialKind; clientId?: string }]> = [
      ['Active Directory Default', { kind: 'default', clientId: 'uid' }],
      ['ActiveDirectoryDefault', { kind: 'default', clientId: 'uid' }],
      ['Active Directory MSI', { kind: 'managed-identity', clientId: 'uid' }],
      ['ActiveDirectoryMSI', { kind: 'managed-identity', clientId: 'uid' }],
      ['ActiveDirectoryWorkloadIdentity', { kind: 'workload-identity', clientId: 'uid' }],
    ];
    for (const [form, expected] of cases) {
      const { factory, asked } = recordingCredentials();
      // the configured AZURE_CLIENT_ID (options.clientId) yields to the connection string's User Id
      buildSqlServerConfig({ ...defaults, clientId: 'app-id', connectionString: `Server=x;Authentication=${form};User Id=uid` }, factory);
      expect(asked, form).toEqual([expected]);
    }
  });

  it('without User Id: Default uses the configured identity when there is one, else DefaultAzureCredential', () => {
    const withApp = recordingCredentials();
    buildSqlServerConfig({ ...defaults, clientId: 'app-id', connectionString: 'Server=x;Authentication=ActiveDirectoryDefault' }, withApp.factory);
    expect(withApp.asked).toEqual([{ kind: 'managed-identity', clientId: 'app-id' }]);
    const bare = recordingCredentials();
    buildSqlServerConfig({ ...defaults, connectionString: 'Server=x;Authentication=ActiveDirectoryDefault' }, bare.factory);
    expect(bare.asked).toEqual([{ kind: 'default', clientId: undefined }]);
  });

  it('maps each credential kind to the credential SqlClient would use', () => {
    // Default + User Id: DefaultAzureCredentialOptions.ManagedIdentityClientId and WorkloadIdentityClientId
    expect(credentialPlan('default', 'uid', undefined)).toEqual({
      type: 'DefaultAzureCredential',
      options: { managedIdentityClientId: 'uid', workloadIdentityClientId: 'uid' },
    });
    expect(credentialPlan('default', undefined, 'env-id')).toEqual({ type: 'ManagedIdentityCredential', options: { clientId: 'env-id' } });
    expect(credentialPlan('default', undefined, undefined)).toEqual({ type: 'DefaultAzureCredential', options: {} });
    expect(credentialPlan('managed-identity', 'uid', 'env-id')).toEqual({ type: 'ManagedIdentityCredential', options: { clientId: 'uid' } });
    expect(credentialPlan('managed-identity', undefined, '')).toEqual({ type: 'ManagedIdentityCredential', options: {} });
    expect(credentialPlan('workload-identity', 'uid', 'env-id')).toEqual({ type: 'WorkloadIdentityCredential', options: { clientId: 'uid' } });
    expect(sqlCredential('default', 'uid-plan').constructor.name).toBe('DefaultAzureCredential');
    // WorkloadIdentityCredential checks its tenant and token file when constructed: a misconfiguration fails early
    expect(() => sqlCredential('workload-identity', 'uid-no-env')).toThrow(/WorkloadIdentityCredential.*tenantId/);
    vi.stubEnv('AZURE_TENANT_ID', '00000000-0000-4000-8000-000000000000');
    vi.stubEnv('AZURE_FEDERATED_TOKEN_FILE', '/var/run/secrets/azure/tokens/azure-identity-token');
    try {
      expect(sqlCredential('workload-identity', 'uid-plan').constructor.name).toBe('WorkloadIdentityCredential');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('refuses SqlClient modes it cannot serve, unknown values, and a Password next to a token mode', () => {
    for (const form of ['Active Directory Password', 'ActiveDirectoryInteractive', 'Active Directory Service Principal', 'ActiveDirectoryDeviceCodeFlow']) {
      expect(() => parseAuthentication(form), form).toThrow(/SqlClient mode that is not supported here/);
    }
    expect(() => parseAuthentication('ManagedIdentity')).toThrow(/not a value SqlClient accepts.*ActiveDirectoryManagedIdentity/);
    expect(() =>
      buildSqlServerConfig({ ...defaults, connectionString: 'Server=x;Authentication=ActiveDirectoryMSI;User Id=u;Password=p' }, recordingCredentials().factory),
    ).toThrow(/takes no Password/);
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
