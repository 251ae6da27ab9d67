import * as sql from 'mssql';
import { describe, expect, it } from 'vitest';
import {
  isTransientError,
  isTransientPostgresError,
  isTransientSqlServerError,
  SQLSERVER_TRANSIENT_NUMBERS,
  sqlServerErrorNumbers,
} from '../../shared/sql/transient';
import { sqlError } from './sqlserver.fakes';

const CURATED = [
  -2, 20, 64, 121, 233, 997, 1204, 1205, 1222, 4060, 4221, 10053, 10054, 10060, 10928, 10929, 40143, 40197, 40501,
  40540, 40613, 49918, 49919, 49920,
];
const PERMANENT = [2627, 2601, 207, 2714, 8134];

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
    class TimeoutError extends Error {}
    const tarn = new TimeoutError('Failed to acquire a connection from the pool: operation timed out for an unknown reason');
    expect(tarn.name).toBe('Error'); // tarn does not set name: the class is the mark
    expect(isTransientSqlServerError(tarn)).toBe(true);
    expect(isTransientSqlServerError(new Error('Timeout acquiring a connection. The pool is probably full.'))).toBe(true);
  });

  it('sqlServerErrorNumbers lists the thrown number first, then preceding ones, without repeats', () => {
    const last = sqlError(3621, 0);
    (last as unknown as { precedingErrors: unknown[] }).precedingErrors = [sqlError(2627, 14), sqlError(3621, 0)];
    expect(sqlServerErrorNumbers(last)).toEqual([3621, 2627]);
    expect(sqlServerErrorNumbers(new Error('x'))).toEqual([]);
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
