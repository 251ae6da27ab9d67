import * as sql from 'mssql';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  classifyPostgresTransient,
  classifySqlServerTransient,
  classifyTransient,
  isTransientError,
  isTransientPostgresError,
  isTransientSqlServerError,
  SQLSERVER_TRANSIENT_NUMBERS,
  sqlServerErrorNumbers,
} from '../../shared/sql/transient';
import { SQLSERVER_CLASS_OF } from '../support/transient-classes';
import { sqlError } from './sqlserver.fakes';

const CURATED = [
  -2, 20, 64, 121, 233, 997, 1204, 1205, 1222, 4060, 4221, 10053, 10054, 10060, 10928, 10929, 40143, 40197, 40501,
  40540, 40613, 49918, 49919, 49920,
];
const PERMANENT = [2627, 2601, 207, 2714, 8134];

/** The real TimeoutError of tarn, the pool inside mssql (resolved from mssql, whose dependency it is). */
const { TimeoutError: TarnTimeoutError } = createRequire(require.resolve('mssql'))('tarn') as { TimeoutError: new (message?: string) => Error };

describe('SQL Server transient classification', () => {
  it('curates exactly the spec’s 24 numbers', () => {
    expect([...SQLSERVER_TRANSIENT_NUMBERS].sort((a, b) => a - b)).toEqual([...CURATED].sort((a, b) => a - b));
  });

  it.each(CURATED)('%i is transient as err.number, as originalError.info.number and inside precedingErrors', (n) => {
    expect(isTransientSqlServerError({ number: n, class: 16 })).toBe(true);
    expect(isTransientSqlServerError({ originalError: { info: { number: n, class: 16 } } })).toBe(true);
    expect(isTransientSqlServerError(sqlError(n, 16))).toBe(true);
    const last = sqlError(2627, 14);
    (last as unknown as { precedingErrors: unknown[] }).precedingErrors = [sqlError(n, 16)];
    expect(isTransientSqlServerError(last)).toBe(true);
    expect(sqlServerErrorNumbers(last)).toEqual([2627, n]);
  });

  it.each(PERMANENT)('%i stays permanent', (n) => {
    expect(isTransientSqlServerError(sqlError(n, 16))).toBe(false);
    expect(isTransientError(sqlError(n, 16))).toBe(false);
  });

  it('a connection-fatal severity (>= 20) is transient whatever the number', () => {
    expect(isTransientSqlServerError(sqlError(207, 20))).toBe(true);
    expect(isTransientSqlServerError(sqlError(207, 19))).toBe(false);
    const last = sqlError(8134, 16);
    (last as unknown as { precedingErrors: unknown[] }).precedingErrors = [sqlError(207, 21)];
    expect(isTransientSqlServerError(last)).toBe(true);
  });

  it.each(['ESOCKET', 'ETIMEOUT', 'ECONNRESET', 'ECONNCLOSED', 'ECONNREFUSED'])('connection code %s is transient', (code) => {
    expect(isTransientSqlServerError(new sql.ConnectionError('connection failed', code as never))).toBe(true);
    const wrapped = new sql.ConnectionError(Object.assign(new Error('socket'), { code }));
    expect(isTransientSqlServerError(wrapped)).toBe(true);
    expect(isTransientSqlServerError({ message: 'x', originalError: { code } })).toBe(true);
  });

  it('ELOGIN, EREQUEST without a number, and a plain Error are not transient', () => {
    expect(isTransientSqlServerError(new sql.ConnectionError('Login failed for user', 'ELOGIN'))).toBe(false);
    expect(isTransientSqlServerError(new sql.RequestError('Invalid column name', 'EREQUEST'))).toBe(false);
    expect(isTransientSqlServerError(new Error('boom'))).toBe(false);
    expect(isTransientSqlServerError(undefined)).toBe(false);
    expect(isTransientSqlServerError('ETIMEOUT')).toBe(false);
  });

  it('an Azure login failure tedious marked retryable, or worded as such, is transient', () => {
    const marked = new sql.ConnectionError(Object.assign(new Error('db unavailable'), { code: 'ELOGIN', isTransient: true }));
    expect(isTransientSqlServerError(marked)).toBe(true);
    const worded = new sql.ConnectionError(
      "Database 'x' on server 'y' is not currently available. Please retry the connection later.",
      'ELOGIN',
    );
    expect(isTransientSqlServerError(worded)).toBe(true);
  });

  it('cancellation is never transient, even with a transient number aboard', () => {
    expect(isTransientSqlServerError(new sql.RequestError('Canceled.', 'ECANCEL'))).toBe(false);
    expect(isTransientSqlServerError(Object.assign(new Error('aborted'), { name: 'AbortError' }))).toBe(false);
    expect(isTransientSqlServerError({ code: 'ECANCEL', number: 1205 })).toBe(false);
    expect(isTransientError(new DOMException('stop', 'AbortError'))).toBe(false);
  });

  it('a pool acquire timeout (tarn TimeoutError, as mssql rethrows it) is transient', () => {
    const tarn = new TarnTimeoutError('Failed to acquire a connection from the pool: operation timed out for an unknown reason');
    expect(tarn.name).toBe('Error'); // tarn does not set name: the class is the mark
    expect(isTransientSqlServerError(tarn)).toBe(true);
    expect(isTransientSqlServerError(new Error('Timeout acquiring a connection. The pool is probably full.'))).toBe(true);
    // tarn's own rejections carry no recognisable text (an acquire timeout has no message at all, a create
    // timeout the cause's message): only the class tells them apart from any other error
    expect(isTransientSqlServerError(new TarnTimeoutError())).toBe(true);
    expect(isTransientSqlServerError(new TarnTimeoutError('getaddrinfo ENOTFOUND db.example'))).toBe(true);
    expect(isTransientSqlServerError(new Error())).toBe(false);
    expect(isTransientSqlServerError(new Error('getaddrinfo ENOTFOUND db.example'))).toBe(false);
  });

  it('sqlServerErrorNumbers lists the thrown number first, then preceding ones, without repeats', () => {
    const last = sqlError(3621, 0);
    (last as unknown as { precedingErrors: unknown[] }).precedingErrors = [sqlError(2627, 14), sqlError(3621, 0)];
    expect(sqlServerErrorNumbers(last)).toEqual([3621, 2627]);
    expect(sqlServerErrorNumbers(new Error('x'))).toEqual([]);
  });
});

// The real classes of the driver and of @azure/identity / MSAL (resolved from their dependents), so the shapes
// are the ones the app receives, not look-alikes.
const tedious = createRequire(require.resolve('mssql'))('tedious') as {
  ConnectionError: new (message: string, code?: string, options?: { cause?: unknown }) => Error;
  RequestError: new (message: string, code?: string) => Error;
};
const identity = createRequire(require.resolve('mssql'))('@azure/identity') as typeof import('@azure/identity');
const msal = createRequire(require.resolve('@azure/identity'))('@azure/msal-node') as {
  AuthError: new (errorCode: string, message?: string) => Error;
  ServerError: new (errorCode: string, message?: string, subError?: string, errorNo?: string, status?: number) => Error;
};

/** What mssql 12 / tedious 19 throw when the token credential's getToken rejects with `credentialError`. */
function tokenFetchFailure(credentialError?: unknown): Error {
  const efedauth = new tedious.ConnectionError('Security token could not be authenticated or authorized.', 'EFEDAUTH');
  return new sql.ConnectionError(new AggregateError(credentialError === undefined ? [efedauth] : [efedauth, credentialError]));
}

describe('SQL Server: a failed Entra token fetch (tedious EFEDAUTH aggregate)', () => {
  it('has the shape tedious 19 and mssql 12 produce: a ConnectionError without a code around an AggregateError', () => {
    const err = tokenFetchFailure(new Error('x')) as Error & { code?: unknown; originalError?: { errors?: unknown[] } };
    expect(err.code).toBeUndefined();
    expect(err.originalError).toBeInstanceOf(AggregateError);
    expect(err.originalError?.errors?.[0]).toMatchObject({ code: 'EFEDAUTH' });
  });

  it('a managed identity endpoint that is unreachable or failing (5xx, 408) is a connection fault', () => {
    const unreachable = new identity.CredentialUnavailableError('ManagedIdentityCredential: Network unreachable. Message: connect ECONNREFUSED', {
      cause: new msal.AuthError('network_error', 'Network request failed'),
    });
    const failing = new identity.CredentialUnavailableError('ManagedIdentityCredential: Authentication failed. Message busy', {
      cause: new msal.ServerError('service_unavailable', 'busy', undefined, undefined, 503),
    });
    const probe = Object.assign(new Error('connect EHOSTUNREACH 169.254.169.254:80'), { code: 'EHOSTUNREACH' });
    const timeout = new identity.AuthenticationError(408, { error: 'request_timeout', error_description: 'timed out' });
    for (const credentialError of [unreachable, failing, probe, timeout]) {
      expect(classifySqlServerTransient(tokenFetchFailure(credentialError)), String(credentialError)).toBe('connection');
      expect(classifyTransient(tokenFetchFailure(credentialError))).toBe('connection');
    }
  });

  it('a throttled token endpoint (429) backs off as throttling', () => {
    const throttled = new identity.AuthenticationError(429, { error: 'too_many_requests', error_description: 'slow down' });
    expect(classifySqlServerTransient(tokenFetchFailure(throttled))).toBe('throttling');
  });

  it('looks through DefaultAzureCredential’s aggregate of credential errors', () => {
    const chain = new identity.AggregateAuthenticationError(
      [
        new identity.CredentialUnavailableError('EnvironmentCredential is unavailable.'),
        new identity.CredentialUnavailableError('ManagedIdentityCredential: Authentication failed.', {
          cause: new msal.ServerError('internal_error', 'oops', undefined, undefined, 500),
        }),
      ],
      'DefaultAzureCredential failed to retrieve a token from the included credentials.',
    );
    expect(classifySqlServerTransient(tokenFetchFailure(chain))).toBe('connection');
  });

  it('a configuration error (no identity, unknown client id, no sign-in, a null token) stays permanent', () => {
    const unknownClient = new identity.AuthenticationError(400, { error: 'invalid_request', error_description: 'Identity not found' });
    const noSignIn = new identity.AggregateAuthenticationError(
      [new identity.CredentialUnavailableError("AzureCliCredential: Please run 'az login' to set up an account.")],
      'DefaultAzureCredential failed to retrieve a token from the included credentials.',
    );
    const forbidden = new identity.CredentialUnavailableError('ManagedIdentityCredential: Authentication failed.', {
      cause: new msal.ServerError('unauthorized_client', 'no', undefined, undefined, 401),
    });
    for (const err of [tokenFetchFailure(unknownClient), tokenFetchFailure(noSignIn), tokenFetchFailure(forbidden), tokenFetchFailure()]) {
      expect(classifySqlServerTransient(err)).toBeNull();
      expect(classifyTransient(err)).toBeNull();
    }
  });
});

describe('SQL Server: socket failures as the driver reports them', () => {
  // tedious hands a request in flight the raw net error (SENT_CLIENT_REQUEST socketError → request.callback(err));
  // mssql's RequestError keeps its code. ECLOSE: "Connection closed before request completed."
  it.each(['EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'])('a request whose socket failed with %s is a connection fault', (code) => {
    const raw = Object.assign(new Error(`write ${code}`), { code, syscall: 'write' });
    expect(classifySqlServerTransient(new sql.RequestError(raw))).toBe('connection');
    // on the connect path tedious wraps it: ESOCKET with the net error as its cause
    const wrapped = new sql.ConnectionError(new tedious.ConnectionError(`Connection lost - write ${code}`, 'ESOCKET', { cause: raw }));
    expect(classifySqlServerTransient(wrapped)).toBe('connection');
  });

  it('ECLOSE (the connection closed under a request) is a connection fault', () => {
    const closed = new sql.RequestError(new tedious.RequestError('Connection closed before request completed.', 'ECLOSE'));
    expect((closed as unknown as { code: string }).code).toBe('ECLOSE');
    expect(classifySqlServerTransient(closed)).toBe('connection');
  });
});

describe('PostgreSQL transient classification', () => {
  const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { code, severity: 'ERROR' });

  it.each(['40001', '40P01', '55P03', '57P01', '57P02', '57P03', '53300', '08000', '08003', '08006', '08P01'])(
    'SQLSTATE %s is transient',
    (code) => {
      expect(isTransientPostgresError(pgError(code))).toBe(true);
      expect(isTransientError(pgError(code))).toBe(true);
    },
  );

  it.each(['23505', '42P01', '42703', '22012', '23502'])('SQLSTATE %s is permanent', (code) => {
    expect(isTransientPostgresError(pgError(code))).toBe(false);
    expect(isTransientError(pgError(code))).toBe(false);
  });

  it.each(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE'])('node code %s is transient', (code) => {
    expect(isTransientPostgresError(Object.assign(new Error('net'), { code }))).toBe(true);
  });

  it('pg connection-terminated and pool connect-timeout errors are transient, also behind a cause', () => {
    expect(isTransientPostgresError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isTransientPostgresError(new Error('timeout exceeded when trying to connect'))).toBe(true);
    const wrapped = new Error('query failed', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) });
    expect(isTransientPostgresError(wrapped)).toBe(true);
  });

  it('SQL Server numbers do not leak into the PostgreSQL verdict, nor PostgreSQL codes into SQL Server’s', () => {
    expect(isTransientPostgresError(sqlError(1205, 13))).toBe(false);
    expect(isTransientSqlServerError(pgError('40P01'))).toBe(false);
    expect(isTransientPostgresError(new Error('boom'))).toBe(false);
  });
});

describe('transient classes (which backoff a fault gets)', () => {
  const CLASS_OF = SQLSERVER_CLASS_OF;

  it('names a class for each of the 24 numbers', () => {
    expect(Object.keys(CLASS_OF).map(Number).sort((a, b) => a - b)).toEqual([...CURATED].sort((a, b) => a - b));
  });

  it.each(Object.entries(CLASS_OF).map(([n, c]) => [Number(n), c] as const))('%i is %s, however mssql carries it', (n, cls) => {
    expect(classifyTransient(sqlError(n, 16))).toBe(cls);
    expect(classifyTransient({ originalError: { info: { number: n, class: 16 } } })).toBe(cls);
    const last = sqlError(2627, 14);
    (last as unknown as { precedingErrors: unknown[] }).precedingErrors = [sqlError(n, 16)];
    expect(classifyTransient(last)).toBe(cls);
  });

  it.each(PERMANENT)('%i has no class', (n) => {
    expect(classifyTransient(sqlError(n, 16))).toBeNull();
  });

  it('reads a number tedious delivered as unsigned 32-bit back as the signed one (-2 arrives as 4294967294)', () => {
    const wrapped = sqlError(2 ** 32 - 2, 16);
    expect(sqlServerErrorNumbers(wrapped)).toEqual([-2]);
    expect(classifyTransient(wrapped)).toBe('connection');
    expect(sqlServerErrorNumbers(sqlError(2 ** 31 - 1, 16))).toEqual([2 ** 31 - 1]);
  });

  it('several transient records: the one asking for the longest wait decides (throttling > failover > lock > connection)', () => {
    const withPreceding = (thrown: sql.RequestError, ...preceding: sql.RequestError[]) => {
      (thrown as unknown as { precedingErrors: unknown[] }).precedingErrors = preceding;
      return thrown;
    };
    expect(classifyTransient(withPreceding(sqlError(1205, 13), sqlError(40501, 16)))).toBe('throttling');
    expect(classifyTransient(withPreceding(sqlError(10054, 20), sqlError(40613, 16)))).toBe('failover');
    expect(classifyTransient(withPreceding(sqlError(233, 16), sqlError(1222, 16)))).toBe('lock');
    // a curated number beats a generic severity: a deadlock reported at class 20 is still a lock conflict
    expect(classifyTransient(sqlError(1205, 20))).toBe('lock');
  });

  it('severity >= 20 without a curated number, connection codes and pool acquire timeouts are connection faults', () => {
    expect(classifyTransient(sqlError(207, 20))).toBe('connection');
    for (const code of ['ESOCKET', 'ETIMEOUT', 'ECONNRESET', 'ECONNCLOSED', 'ECONNREFUSED']) {
      expect(classifyTransient(new sql.ConnectionError('connection failed', code as never))).toBe('connection');
      expect(classifyTransient(new sql.RequestError(Object.assign(new Error('x'), { code }), 'EREQUEST'))).toBe('connection');
    }
    expect(classifyTransient(new TarnTimeoutError('Failed to acquire a connection from the pool: operation timed out for an unknown reason'))).toBe(
      'connection',
    );
    expect(classifyTransient(new TarnTimeoutError())).toBe('connection');
  });

  it('Azure login failures are classed by the server’s wording (tedious drops their number)', () => {
    const busy = new sql.ConnectionError('The service is currently busy. Retry the request after 10 seconds.', 'ELOGIN');
    expect(classifyTransient(busy)).toBe('throttling');
    const unavailable = new sql.ConnectionError("Database 'x' on server 'y' is not currently available. Please retry the connection later.", 'ELOGIN');
    expect(classifyTransient(unavailable)).toBe('failover');
    const marked = new sql.ConnectionError(Object.assign(new Error('db unavailable'), { code: 'ELOGIN', isTransient: true }));
    expect(classifyTransient(marked)).toBe('failover');
    expect(classifyTransient(new sql.ConnectionError("Login failed for user 'app'.", 'ELOGIN'))).toBeNull();
  });

  it('cancellation has no class, even with a transient number or code aboard', () => {
    expect(classifyTransient({ code: 'ECANCEL', number: 40501 })).toBeNull();
    expect(classifyTransient(Object.assign(new Error('aborted'), { name: 'AbortError', code: 'ECONNRESET' }))).toBeNull();
  });

  it('PostgreSQL: lock conflicts, throttling, failover and connection faults', () => {
    const pg = (code: string) => Object.assign(new Error(`pg ${code}`), { code });
    expect(['40001', '40P01', '55P03'].map((c) => classifyPostgresTransient(pg(c)))).toEqual(['lock', 'lock', 'lock']);
    expect(classifyPostgresTransient(pg('53300'))).toBe('throttling');
    expect(['57P01', '57P02', '57P03'].map((c) => classifyPostgresTransient(pg(c)))).toEqual(['failover', 'failover', 'failover']);
    expect(['08006', 'ECONNRESET', 'ETIMEDOUT'].map((c) => classifyPostgresTransient(pg(c)))).toEqual(['connection', 'connection', 'connection']);
    expect(classifyPostgresTransient(new Error('Connection terminated unexpectedly'))).toBe('connection');
    expect(classifyPostgresTransient(pg('23505'))).toBeNull();
    expect(classifyTransient(pg('40P01'))).toBe('lock');
  });

  it('isTransient* is exactly "has a class", for both drivers', () => {
    const samples: unknown[] = [
      ...CURATED.map((n) => sqlError(n, 16)),
      ...PERMANENT.map((n) => sqlError(n, 16)),
      sqlError(207, 21),
      new sql.ConnectionError('x', 'ESOCKET'),
      new sql.ConnectionError('Login failed', 'ELOGIN'),
      Object.assign(new Error('pg'), { code: '40001' }),
      Object.assign(new Error('pg'), { code: '42P01' }),
      new Error('boom'),
      undefined,
    ];
    for (const e of samples) {
      expect(isTransientSqlServerError(e)).toBe(classifySqlServerTransient(e) !== null);
      expect(isTransientPostgresError(e)).toBe(classifyPostgresTransient(e) !== null);
      expect(isTransientError(e)).toBe(classifyTransient(e) !== null);
    }
  });
});
