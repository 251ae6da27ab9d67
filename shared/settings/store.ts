// The store settings: which database (SQL_* / DATABASE_URL / PGLITE_DATA_DIR), its schema and table names, the
// pool and the Entra identity.

import type { Dialect } from '../sql/identifiers';
import { validateIdentifier } from '../sql/identifiers';
import { DEFAULT_TRANSPORT_TABLE } from '../stores/options';
import type { PoolOptions, StoreSelection } from '../stores/selection';
import type { Env, Readers, Str } from './env';

export interface StoreSettings {
  store: StoreSelection;
  dialect: Dialect;
  schema: string;
  transportTable: string;
  autoCreateSchema: boolean;
  /** DURABLE_CLAIMS_AND_ACKS (PostgreSQL): claims and acks wait for the WAL flush too. */
  durableClaimsAndAcks: boolean;
  pool: PoolOptions;
  azureClientId?: string;
}

export function readStore(env: Env, { str, num, bool }: Readers, problems: string[]): StoreSettings {
  const store = selectStore(env, str, problems);
  const dialect: Dialect = store.kind === 'sqlserver' ? 'sqlserver' : 'postgres';
  const schema = str('SQL_SCHEMA') ?? (dialect === 'sqlserver' ? 'dbo' : 'public');
  const transportTable = str('TRANSPORT_TABLE') ?? DEFAULT_TRANSPORT_TABLE;
  for (const [what, value] of [
    ['SQL_SCHEMA', schema],
    ['TRANSPORT_TABLE', transportTable],
  ] as const) {
    try {
      validateIdentifier(value, what, dialect);
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  const pool: PoolOptions = {
    max: num('SQL_POOL_MAX', 10, { min: 1, max: 1000, integer: true }),
    min: num('SQL_POOL_MIN', 0, { max: 1000, integer: true }),
    connectTimeoutMs: num('SQL_CONNECT_TIMEOUT_SECONDS', 15, { min: 1, max: 600 }) * 1000,
    requestTimeoutMs: num('SQL_REQUEST_TIMEOUT_SECONDS', 30, { min: 1, max: 3600 }) * 1000,
  };
  if (pool.min > pool.max) problems.push('SQL_POOL_MIN must not exceed SQL_POOL_MAX');
  return { store, dialect, schema, transportTable, autoCreateSchema: bool('AUTO_CREATE_SCHEMA', true), durableClaimsAndAcks: bool('DURABLE_CLAIMS_AND_ACKS', false), pool, azureClientId: str('AZURE_CLIENT_ID') };
}

function selectStore(env: Env, str: (n: string) => string | undefined, problems: string[]): StoreSelection {
  const connectionString = str('SQL_CONNECTION_STRING');
  const server = str('SQL_SERVER');
  const databaseUrl = str('DATABASE_URL');
  if (connectionString || server) {
    if (databaseUrl) problems.push('set either a SQL Server (SQL_CONNECTION_STRING / SQL_SERVER) or DATABASE_URL, not both');
    if (server && !connectionString && !str('SQL_DATABASE')) problems.push('SQL_SERVER needs SQL_DATABASE');
    const port = str('SQL_PORT');
    if (port !== undefined && !/^\d{1,5}$/.test(port)) problems.push(`SQL_PORT='${port}' must be a port number`);
    return {
      kind: 'sqlserver',
      connectionString,
      server,
      database: str('SQL_DATABASE'),
      user: str('SQL_USER'),
      password: env.SQL_PASSWORD,
      port: port ? Number(port) : undefined,
      trustServerCertificate: /^(true|1|yes)$/i.test(str('SQL_TRUST_SERVER_CERTIFICATE') ?? ''),
    };
  }
  if (databaseUrl) {
    if (!/^postgres(ql)?:\/\//i.test(databaseUrl)) problems.push('DATABASE_URL must start with postgres:// or postgresql://');
    return { kind: 'postgres', url: databaseUrl };
  }
  return { kind: 'pglite', dataDir: str('PGLITE_DATA_DIR') ?? '.data/pglite' };
}
