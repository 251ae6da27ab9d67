// SQL Server connection: ADO.NET connection strings as copied from the Azure portal, SQL authentication when a
// password is given, otherwise Entra through ONE module-level token credential (tokens are fetched per new
// physical connection; a static access token would expire under a long-lived pool).

import * as sql from 'mssql';
import type { DefaultAzureCredential, ManagedIdentityCredential, WorkloadIdentityCredential } from '@azure/identity';
import type { Logger } from '../../log';
import { trackOpen } from '../open-handles';
import { requirePeer } from '../../peer';

export interface SqlServerConnectionOptions {
  connectionString?: string;
  server?: string;
  database?: string;
  user?: string;
  password?: string;
  port?: number;
  encrypt?: boolean;
  trustServerCertificate?: boolean;
  poolMax: number;
  poolMin: number;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  /**
   * After a request timeout tedious sends an attention (cancel) and waits this long for the server's ack before it
   * drops the connection; the failed request is reported only then. tedious's default is 5000 ms.
   */
  cancelTimeoutMs?: number;
  /** user-assigned managed identity; defaults to AZURE_CLIENT_ID. */
  clientId?: string;
}

export type SqlAuthentication = 'sql' | 'entra-default' | 'entra-managed-identity' | 'entra-workload-identity';

/** What a connection string said; absent keys stay undefined. */
export interface ParsedSqlConnectionString {
  server?: string;
  port?: number;
  instanceName?: string;
  database?: string;
  user?: string;
  password?: string;
  encrypt?: boolean | 'strict';
  trustServerCertificate?: boolean;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  poolMax?: number;
  poolMin?: number;
  applicationName?: string;
  authentication?: SqlAuthentication;
  /** keys that were recognised as harmless and ignored (e.g. MultipleActiveResultSets). */
  ignoredKeys: string[];
}

type SqlCredential = DefaultAzureCredential | ManagedIdentityCredential | WorkloadIdentityCredential;

/** Splits `key=value;…` honouring "…" and '…' quoting (a doubled quote inside is a literal quote). */
function tokenize(input: string): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  let i = 0;
  while (i < input.length) {
    while (i < input.length && (input[i] === ';' || /\s/.test(input[i] ?? ''))) i++;
    if (i >= input.length) break;
    const eq = input.indexOf('=', i);
    if (eq < 0) throw new Error(`connection string: '${input.slice(i).trim()}' has no '='`);
    const key = input.slice(i, eq).trim().replace(/\s+/g, ' ').toLowerCase();
    i = eq + 1;
    while (i < input.length && (input[i] === ' ' || input[i] === '\t')) i++;
    let value = '';
    const quote = input[i];
    if (quote === '"' || quote === "'") {
      i++;
      for (;;) {
        if (i >= input.length) throw new Error(`connection string: the value of '${key}' has no closing ${quote}`);
        if (input[i] === quote) {
          if (input[i + 1] === quote) {
            value += quote;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += input[i];
        i++;
      }
      while (i < input.length && input[i] !== ';') {
        if (!/\s/.test(input[i] ?? '')) throw new Error(`connection string: unexpected text after the quoted value of '${key}'`);
        i++;
      }
    } else {
      const end = input.indexOf(';', i);
      value = input.slice(i, end < 0 ? input.length : end).trim();
      i = end < 0 ? input.length : end;
    }
    if (key) pairs.push([key, value]);
  }
  return pairs;
}

function parseBoolean(key: string, value: string): boolean {
  const v = value.trim().toLowerCase();
  if (['true', 'yes', '1', 'mandatory'].includes(v)) return true;
  if (['false', 'no', '0', 'optional'].includes(v)) return false;
  throw new Error(`connection string: '${key}' must be true or false, not '${value}'`);
}

function parseInteger(key: string, value: string): number {
  if (!/^\s*\d+\s*$/.test(value)) throw new Error(`connection string: '${key}' must be a whole number, not '${value}'`);
  return Number(value);
}

/** `tcp:host\instance,port` → parts. Named pipes are not supported by tedious. */
export function parseServer(value: string): { server: string; port?: number; instanceName?: string } {
  let server = value.trim();
  if (/^np:/i.test(server)) throw new Error('connection string: named pipes (np:) are not supported; use tcp:host,port');
  server = server.replace(/^tcp:/i, '');
  let port: number | undefined;
  const comma = server.lastIndexOf(',');
  if (comma >= 0) {
    port = parseInteger('Server port', server.slice(comma + 1));
    server = server.slice(0, comma).trim();
  }
  let instanceName: string | undefined;
  const slash = server.indexOf('\\');
  if (slash >= 0) {
    instanceName = server.slice(slash + 1).trim();
    server = server.slice(0, slash).trim();
  }
  if (server === '.' || server === '(local)' || server.toLowerCase() === '(localdb)') server = 'localhost';
  return { server, ...(port !== undefined ? { port } : {}), ...(instanceName ? { instanceName } : {}) };
}

/**
 * The Authentication values Microsoft.Data.SqlClient accepts, as it spells them: its TryConvertToAuthenticationType
 * (dotnet/SqlClient src/Microsoft.Data.SqlClient/src/Microsoft/Data/Common/DbConnectionStringCommon.cs) compares the
 * trimmed value case-insensitively with the spaced name ("Active Directory Managed Identity") and with the
 * SqlAuthenticationMethod enum name ("ActiveDirectoryManagedIdentity", Service Connector's form). Whitespace runs
 * inside the spaced name are collapsed here as well. What `User Id` means under each mode is SqlClient's
 * ActiveDirectoryAuthenticationProvider (src/Microsoft.Data.SqlClient/src/Microsoft/Data/SqlClient/
 * ActiveDirectoryAuthenticationProvider.cs): Managed Identity / MSI → the user-assigned identity's client id
 * (none: system-assigned); Default → DefaultAzureCredentialOptions.ManagedIdentityClientId and
 * WorkloadIdentityClientId; Workload Identity → WorkloadIdentityCredentialOptions.ClientId.
 */
const AUTHENTICATION_MODES: ReadonlyArray<readonly [spaced: string, enumName: string, mode: SqlAuthentication]> = [
  ['sql password', 'sqlpassword', 'sql'],
  ['active directory default', 'activedirectorydefault', 'entra-default'],
  ['active directory managed identity', 'activedirectorymanagedidentity', 'entra-managed-identity'],
  ['active directory msi', 'activedirectorymsi', 'entra-managed-identity'],
  ['active directory workload identity', 'activedirectoryworkloadidentity', 'entra-workload-identity'],
];

/** SqlClient modes that need a user, a browser, a secret or Windows: recognised, but refused here. */
const UNSUPPORTED_MODES = [
  'active directory password',
  'active directory integrated',
  'active directory interactive',
  'active directory service principal',
  'active directory device code flow',
  'active directory federated identity credentials',
];

export function parseAuthentication(value: string): SqlAuthentication {
  const spaced = value.trim().toLowerCase().replace(/\s+/g, ' ');
  for (const [name, enumName, mode] of AUTHENTICATION_MODES) {
    if (spaced === name || spaced === enumName) return mode;
  }
  const known = UNSUPPORTED_MODES.find((name) => spaced === name || spaced === name.replace(/ /g, ''));
  throw new Error(
    `connection string: Authentication='${value}' is ${known ? 'a SqlClient mode that is not supported here' : 'not a value SqlClient accepts'}; ` +
      "use 'Active Directory Default', 'Active Directory Managed Identity' / 'Active Directory MSI' (User Id = a " +
      "user-assigned identity's client id), 'Active Directory Workload Identity', or SQL authentication (Password=…); " +
      'the forms without spaces (ActiveDirectoryManagedIdentity, …) work too.',
  );
}

const IGNORED_KEYS = new Set([
  'multipleactiveresultsets',
  'multiple active result sets',
  'persist security info',
  'pooling',
  'connection lifetime',
  'load balance timeout',
  'application intent',
  'applicationintent',
  'multisubnetfailover',
  'multi subnet failover',
  'connectretrycount',
  'connect retry count',
  'connectretryinterval',
  'connect retry interval',
  'packet size',
  'workstation id',
  'wsid',
  'hostnameincertificate',
  'host name in certificate',
  'column encryption setting',
  'language',
  'current language',
]);

/** Parses an ADO.NET / Microsoft.Data.SqlClient connection string (keys case-insensitive). Pure. */
export function parseSqlConnectionString(connectionString: string): ParsedSqlConnectionString {
  const out: ParsedSqlConnectionString = { ignoredKeys: [] };
  for (const [key, value] of tokenize(connectionString)) {
    switch (key) {
      case 'server':
      case 'data source':
      case 'address':
      case 'addr':
      case 'network address':
        Object.assign(out, parseServer(value));
        break;
      case 'port':
        out.port = parseInteger(key, value);
        break;
      case 'database':
      case 'initial catalog':
        out.database = value;
        break;
      case 'user id':
      case 'userid':
      case 'uid':
      case 'user':
        out.user = value;
        break;
      case 'password':
      case 'pwd':
        out.password = value;
        break;
      case 'encrypt':
        out.encrypt = value.trim().toLowerCase() === 'strict' ? 'strict' : parseBoolean(key, value);
        break;
      case 'trustservercertificate':
      case 'trust server certificate':
        out.trustServerCertificate = parseBoolean(key, value);
        break;
      case 'connect timeout':
      case 'connection timeout':
      case 'timeout':
        out.connectTimeoutMs = parseInteger(key, value) * 1000;
        break;
      case 'command timeout':
        out.requestTimeoutMs = parseInteger(key, value) * 1000;
        break;
      case 'max pool size':
        out.poolMax = parseInteger(key, value);
        break;
      case 'min pool size':
        out.poolMin = parseInteger(key, value);
        break;
      case 'application name':
      case 'app':
        out.applicationName = value;
        break;
      case 'authentication':
        out.authentication = parseAuthentication(value);
        break;
      case 'integrated security':
      case 'trusted_connection':
        if (parseBoolean(key, value.toLowerCase() === 'sspi' ? 'true' : value)) {
          throw new Error('connection string: Windows integrated security is not supported; use Entra (Authentication=Active Directory Default) or SQL authentication.');
        }
        break;
      default:
        if (IGNORED_KEYS.has(key)) {
          out.ignoredKeys.push(key);
          break;
        }
        throw new Error(`connection string: unknown key '${key}'`);
    }
  }
  return out;
}

// One credential per identity for the whole process; @azure/identity caches its tokens inside it.
const credentials = new Map<string, SqlCredential>();

export type CredentialKind = 'default' | 'managed-identity' | 'workload-identity';

/** Which @azure/identity credential serves a kind and client id; pure, so the choice is tested without Azure. */
export interface CredentialPlan {
  type: 'DefaultAzureCredential' | 'ManagedIdentityCredential' | 'WorkloadIdentityCredential';
  options: Record<string, string>;
}

/**
 * 'default' with a client id: DefaultAzureCredential using it for both the managed and the workload identity
 * (what SqlClient does with User Id under Active Directory Default); without one, ManagedIdentityCredential for
 * AZURE_CLIENT_ID when set, else DefaultAzureCredential (developer sign-ins). 'managed-identity': that identity
 * (AZURE_CLIENT_ID when none is given), system-assigned without an id. 'workload-identity': WorkloadIdentityCredential,
 * which reads AZURE_CLIENT_ID / AZURE_TENANT_ID / AZURE_FEDERATED_TOKEN_FILE for what is not given.
 */
export function credentialPlan(kind: CredentialKind, clientId?: string, envClientId = process.env.AZURE_CLIENT_ID): CredentialPlan {
  const configured = envClientId || undefined;
  switch (kind) {
    case 'default':
      if (clientId) return { type: 'DefaultAzureCredential', options: { managedIdentityClientId: clientId, workloadIdentityClientId: clientId } };
      return configured ? { type: 'ManagedIdentityCredential', options: { clientId: configured } } : { type: 'DefaultAzureCredential', options: {} };
    case 'managed-identity': {
      const id = clientId || configured;
      return { type: 'ManagedIdentityCredential', options: id ? { clientId: id } : {} };
    }
    case 'workload-identity':
      return { type: 'WorkloadIdentityCredential', options: clientId ? { clientId } : {} };
  }
}

export function sqlCredential(kind: CredentialKind, clientId?: string): SqlCredential {
  const plan = credentialPlan(kind, clientId);
  const key = `${plan.type}:${JSON.stringify(plan.options)}`;
  let credential = credentials.get(key);
  if (!credential) {
    // Loaded on first use: most processes (tests, PostgreSQL hosts) never need it.
    const identity = requirePeer<typeof import('@azure/identity')>('@azure/identity');
    credential =
      plan.type === 'DefaultAzureCredential'
        ? new identity.DefaultAzureCredential(plan.options)
        : plan.type === 'ManagedIdentityCredential'
          ? new identity.ManagedIdentityCredential(plan.options)
          : new identity.WorkloadIdentityCredential(plan.options);
    credentials.set(key, credential);
  }
  return credential;
}

export interface ResolvedSqlServerConfig {
  config: sql.config;
  authentication: SqlAuthentication;
  ignoredKeys: string[];
}

function authenticationName(authentication: SqlAuthentication): string {
  return { sql: 'Sql Password', 'entra-default': 'Active Directory Default', 'entra-managed-identity': 'Active Directory Managed Identity', 'entra-workload-identity': 'Active Directory Workload Identity' }[authentication];
}

/**
 * The credential of an Entra mode. A connection string's User Id is the client id SqlClient would use (see
 * AUTHENTICATION_MODES); without one the app's configured identity (AZURE_CLIENT_ID) is a managed identity.
 */
function entraCredential(
  authentication: Exclude<SqlAuthentication, 'sql'>,
  userId: string | undefined,
  configuredClientId: string | undefined,
  credentialFor: (kind: CredentialKind, clientId?: string) => SqlCredential,
): SqlCredential {
  switch (authentication) {
    case 'entra-managed-identity':
      return credentialFor('managed-identity', userId || configuredClientId);
    case 'entra-workload-identity':
      return credentialFor('workload-identity', userId || configuredClientId);
    case 'entra-default':
      if (userId) return credentialFor('default', userId);
      return configuredClientId ? credentialFor('managed-identity', configuredClientId) : credentialFor('default');
  }
}

/**
 * Builds the mssql config. Values in the connection string win over the separate options, which fill the gaps
 * (so a portal string's Max Pool Size or Connect Timeout is honoured).
 */
export function buildSqlServerConfig(
  options: SqlServerConnectionOptions,
  credentialFor: (kind: CredentialKind, clientId?: string) => SqlCredential = sqlCredential,
): ResolvedSqlServerConfig {
  const parsed: ParsedSqlConnectionString = options.connectionString
    ? parseSqlConnectionString(options.connectionString)
    : { ignoredKeys: [] };
  const fromOption = options.server ? parseServer(options.server) : undefined;
  const server = parsed.server ?? fromOption?.server;
  if (!server) throw new Error('SQL Server: no server given (Server=… in the connection string, or SQL_SERVER).');
  const database = parsed.database ?? options.database;
  const password = parsed.password ?? options.password;
  const user = parsed.user ?? options.user;
  const authentication: SqlAuthentication =
    parsed.authentication ?? (password !== undefined && password !== '' ? 'sql' : 'entra-default');
  const instanceName = parsed.instanceName ?? fromOption?.instanceName;
  const connectTimeoutMs = parsed.connectTimeoutMs ?? options.connectTimeoutMs;

  const config: sql.config = {
    server,
    port: parsed.port ?? fromOption?.port ?? options.port ?? 1433,
    ...(database ? { database } : {}),
    connectionTimeout: connectTimeoutMs,
    requestTimeout: parsed.requestTimeoutMs ?? options.requestTimeoutMs,
    // checks the socket instead of running SELECT 1 before every borrowed connection
    validateConnection: 'socket',
    options: {
      encrypt: parsed.encrypt ?? options.encrypt ?? true,
      trustServerCertificate: parsed.trustServerCertificate ?? options.trustServerCertificate ?? false,
      appName: parsed.applicationName ?? 'asyncresponse-functions',
      ...(instanceName ? { instanceName } : {}),
      ...(options.cancelTimeoutMs !== undefined ? { cancelTimeout: options.cancelTimeoutMs } : {}),
    },
    pool: {
      max: parsed.poolMax ?? options.poolMax,
      min: parsed.poolMin ?? options.poolMin,
      idleTimeoutMillis: 30_000,
      // a pool wait is bounded like SqlClient's: by the connect timeout
      acquireTimeoutMillis: Math.max(1000, connectTimeoutMs),
    },
  };

  if (authentication === 'sql') {
    if (!user) throw new Error('SQL Server: SQL authentication needs a user (User Id=…) as well as the password.');
    config.user = user;
    config.password = password ?? '';
  } else {
    if (parsed.password) {
      // as SqlClient: a password next to a token mode is a mistake, not something to ignore silently
      throw new Error(`SQL Server: Authentication=${authenticationName(authentication)} takes no Password; remove it (User Id is the identity's client id).`);
    }
    config.authentication = { type: 'token-credential', options: { credential: entraCredential(authentication, user, options.clientId, credentialFor) } };
  }
  return { config, authentication, ignoredKeys: parsed.ignoredKeys };
}

/**
 * A pool that connects on first use (the store calls connect()). Pool-level errors (a connection that dies
 * while idle) are logged instead of reaching the process as an unhandled 'error' event.
 */
export function createSqlServerPool(
  options: SqlServerConnectionOptions,
  logger?: Logger,
  credentialFor?: (kind: CredentialKind, clientId?: string) => SqlCredential,
): sql.ConnectionPool {
  const { config, ignoredKeys } = buildSqlServerConfig(options, credentialFor);
  if (ignoredKeys.length > 0) logger?.debug(`SQL Server connection string: ignored ${ignoredKeys.join(', ')}`);
  const pool = new sql.ConnectionPool(config);
  // acquire failures also reach the caller; this only keeps an idle connection's error from crashing the process
  pool.on('error', (err: unknown) => logger?.debug('SQL Server pool error', err));
  // open from creation until close(); a pool reconnected after close() (an in-place rebuild) is open again
  let release: (() => void) | null = trackOpen('mssql pool');
  const close = pool.close.bind(pool) as () => Promise<void>;
  const connect = pool.connect.bind(pool) as () => Promise<sql.ConnectionPool>;
  (pool as unknown as { close: () => Promise<void> }).close = async () => {
    release?.();
    release = null;
    await close();
  };
  (pool as unknown as { connect: () => Promise<sql.ConnectionPool> }).connect = () => {
    release ??= trackOpen('mssql pool');
    return connect();
  };
  return pool;
}

/** A request on a pool or transaction with an optional per-request timeout (mssql 12 supports it; @types lag). */
export function newRequest(parent: sql.ConnectionPool | sql.Transaction, requestTimeoutMs?: number): sql.Request {
  const factory = parent.request as unknown as (conf?: { requestTimeout?: number }) => sql.Request;
  return factory.call(parent, requestTimeoutMs === undefined ? undefined : { requestTimeout: requestTimeoutMs });
}
