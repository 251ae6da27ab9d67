// The real mssql/tedious client's errors for faults below SQL: a failed Entra token fetch (the fault server asks
// for a token with FEDAUTHINFO and the credential's getToken rejects) and a socket that fails under a request in
// flight (the client's own socket is destroyed with the OS error while the server stalls the request). Each must
// be classified the way the retry code needs: a managed identity endpoint hiccup or a lost socket is retried, a
// misconfigured identity is not.

import type { AccessToken, TokenCredential } from '@azure/identity';
import * as sql from 'mssql';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { classifySqlServerTransient, classifyTransient } from '../../shared/sql/transient';
import { buildSqlServerConfig } from '../../shared/stores/sqlserver/connection';
import { FaultServer, ok, stall, type SqlRequest } from '../tds/fault-server';
import { connectionTo, faultScope, idsIn, message, publisherFor, publishingAnswer, retriedClasses, statementOf } from './harness';

const identity = createRequire(require.resolve('mssql'))('@azure/identity') as typeof import('@azure/identity');

const faults = faultScope();

/** A credential whose first `failures` getToken calls reject with `error`, then issue tokens. */
function flakyCredential(failures: number, error: () => Error) {
  let calls = 0;
  const credential: TokenCredential = {
    async getToken(): Promise<AccessToken> {
      calls++;
      if (calls <= failures) throw error();
      return { token: `token-${calls}`, expiresOnTimestamp: Date.now() + 3_600_000 };
    },
  };
  return { credential, calls: () => calls };
}

const endpointDown = () =>
  new identity.CredentialUnavailableError('ManagedIdentityCredential: Network unreachable. Message: connect ECONNREFUSED 127.0.0.1:41741', {
    cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:41741'), { code: 'ECONNREFUSED' }),
  });

const identityNotFound = () => new identity.AuthenticationError(400, { error: 'invalid_request', error_description: 'Identity not found' });

describe('Entra token fetch failures through the real driver', () => {
  it('a managed identity endpoint hiccup is retried: the publish succeeds with the next token', async () => {
    const flaky = flakyCredential(1, endpointDown);
    const { server, logger, store } = await faults.start(
      { fedAuth: true, onRequest: publishingAnswer },
      { user: undefined, password: undefined },
      () => flaky.credential as never,
    );
    const id = randomUUID();
    const [outcome] = await publisherFor(store, logger).publish([message(id)]);

    expect(outcome).toMatchObject({ id, inserted: true });
    expect(retriedClasses(logger.logs)).toEqual(['connection']);
    // one failed fetch, then one token per physical connection (mssql's connect probe and the request's)
    expect(flaky.calls()).toBe(server.logins.length + 1);
    expect(server.logins[0]?.fedAuthToken).toBe('token-2');
    expect(server.requests.filter((r) => statementOf(r) === 'publish' && idsIn(r).includes(id))).toHaveLength(1);
  });

  it('the error the store surfaces is the driver’s EFEDAUTH aggregate, classified by the credential’s error', async () => {
    const flaky = flakyCredential(Infinity, endpointDown);
    const { store } = await faults.start({ fedAuth: true, onRequest: publishingAnswer }, { user: undefined, password: undefined }, () => flaky.credential as never);
    const err = (await store.publish([message()]).catch((e: unknown) => e)) as { name?: string; code?: unknown; originalError?: { errors?: unknown[] } };

    expect(err).toMatchObject({ name: 'ConnectionError' });
    expect(err.code).toBeUndefined();
    expect(err.originalError).toBeInstanceOf(AggregateError);
    expect(err.originalError?.errors?.map((e) => (e as { code?: string; name?: string }).code ?? (e as { name?: string }).name)).toEqual([
      'EFEDAUTH',
      'CredentialUnavailableError',
    ]);
    expect(classifySqlServerTransient(err)).toBe('connection');
  });

  it('an identity that does not exist fails the publish at once, without retries', async () => {
    const flaky = flakyCredential(Infinity, identityNotFound);
    const { server, logger, store } = await faults.start(
      { fedAuth: true, onRequest: publishingAnswer },
      { user: undefined, password: undefined },
      () => flaky.credential as never,
    );
    const err = await publisherFor(store, logger).publish([message()]).catch((e: unknown) => e);

    expect(classifyTransient(err)).toBeNull();
    expect(retriedClasses(logger.logs)).toEqual([]);
    expect(server.logins).toEqual([]); // the server never saw a token
  });
});

interface TediousConnection {
  socket?: Socket;
  state?: { name: string };
}

describe('socket failures under a request in flight (real driver)', () => {
  /** A pool with the app's config over the fault server, recording each physical connection's socket. */
  async function stalledRequest(): Promise<{ socket: Socket; query: Promise<unknown> }> {
    const server = new FaultServer({ onRequest: (r: SqlRequest) => (r.text.includes('SELECT 42') ? stall() : ok()) });
    faults.closeAfter(() => server.close());
    const { config } = buildSqlServerConfig(connectionTo(await server.start(), { poolMax: 1 }));
    // tedious creates the socket inside connect(): keep the connections (mssql's connect() probe is the first one
    // and is closed again), then take the socket of the one whose request is in flight
    const connections: TediousConnection[] = [];
    const pool = new sql.ConnectionPool({ ...config, beforeConnect: (conn) => void connections.push(conn as unknown as TediousConnection) });
    faults.closeAfter(() => pool.close().then(() => undefined, () => undefined));
    await pool.connect();
    const query = pool.request().query('SELECT 42 AS answer').then(
      () => new Error('the stalled query returned'),
      (e: unknown) => e,
    );
    while (server.requestsMatching('SELECT 42').length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const socket = connections.find((c) => c.state?.name === 'SentClientRequest')?.socket;
    if (!socket) throw new Error('no tedious connection with a request in flight');
    return { socket, query };
  }

  it.each(['EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH'])('%s on the socket reaches the request with that code, as a connection fault', async (code) => {
    const { socket, query } = await stalledRequest();
    socket.destroy(Object.assign(new Error(`read ${code}`), { code, syscall: 'read' }));
    const err = await query;

    expect(err).toMatchObject({ name: 'RequestError', code });
    expect(classifySqlServerTransient(err)).toBe('connection');
  });

  it('ECLOSE: the connection closes under the request', async () => {
    const { socket, query } = await stalledRequest();
    socket.destroy();
    const err = await query;

    expect(err).toMatchObject({ name: 'RequestError', code: 'ECLOSE' });
    expect(classifySqlServerTransient(err)).toBe('connection');
  });
});
