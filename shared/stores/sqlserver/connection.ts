// SQL Server connection: ADO.NET connection strings as copied from the Azure portal, SQL authentication when a
// password is given, otherwise Entra through ONE module-level token credential (tokens are fetched per new
// physical connection; a static access token would expire under a long-lived pool).

import * as sql from 'mssql';
import type { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import type { Logger } from '../../log';
import { trackOpen } from '../open-handles';

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

export type SqlAuthentication = 'sql' | 'entra-default' | 'entra-managed-identity';

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

type SqlCredential = DefaultAzureCredential | ManagedIdentityCredential;

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

function parseAuthentication(value: string): SqlAuthentication {
  const v = value.trim().toLowerCase().replace(/\s+/g, ' ');
  switch (v) {
    case 'sqlpassword':
    case 'sql password':
      return 'sql';
    case 'active directory default':
    case 'active directory workload identity':
      return 'entra-default';
    case 'active directory managed identity':
    case 'active directory msi':
      return 'entra-managed-identity';
    default:
      throw new Error(
        `connection string: Authentication='${value}' is not supported here; use 'Active Directory Default', ` +
          "'Active Directory Managed Identity' (User Id = the identity's client id) or SQL authentication (Password=…).",
      );
  }
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

export type CredentialKind = 'default' | 'managed-identity';

/**
 * 'default': ManagedIdentityCredential for AZURE_CLIENT_ID (or the given client id) when set, else
 * DefaultAzureCredential (developer sign-ins). 'managed-identity': that identity, system-assigned without an id.
 */
export function sqlCredential(kind: CredentialKind, clientId?: string): SqlCredential {
  const id = clientId || process.env.AZURE_CLIENT_ID || undefined;
  const key = id ? `mi:${id}` : kind === 'managed-identity' ? 'mi:system' : 'default';
  let credential = credentials.get(key);
  if (!credential) {
    // Loaded on first use: most processes (tests, PostgreSQL hosts) never need it.
    const identity = require('@azure/identity') as typeof import('@azure/identity');
    credential = id
      ? new identity.ManagedIdentityCredential({ clientId: id })
      : kind === 'managed-identity'
        ? new identity.ManagedIdentityCredential()
        : new identity.DefaultAzureCredential();
    credentials.set(key, credential);
  }
  return credential;
}

export interface ResolvedSqlServerConfig {
  config: sql.config;
  authentication: SqlAuthentication;
  ignoredKeys: string[];
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
    // For the managed-identity form the portal puts the identity's client id in User Id.
    const credential =
      authentication === 'entra-managed-identity'
        ? credentialFor('managed-identity', user || options.clientId)
        : credentialFor('default', options.clientId);
    config.authentication = { type: 'token-credential', options: { credential } };
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
