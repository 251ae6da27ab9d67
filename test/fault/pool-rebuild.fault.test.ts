// After a failover the pool's connections are dead and new logins can be refused (18456 "Login failed",
// "Token is expired"): the store's pool guard closes the pool, builds a fresh one and runs the operation once more.
// Real tedious logins against the fault server, with SQL authentication and with Entra token-credential (the
// FEDAUTHINFO → access token exchange, tokens from a fake TokenCredential).

import type { AccessToken, TokenCredential } from '@azure/identity';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { classifyTransient } from '../../shared/sql/transient';
import { isPoolRejection } from '../../shared/stores/sqlserver/pool-guard';
import type { LoginAttempt } from '../tds/fault-server';
import {
  failover,
  faultScope,
  idsIn,
  loginFailed,
  message,
  publisherFor,
  publishingAnswer as answer,
  refusableLogins,
  statementOf,
} from './harness';

const faults = faultScope();

describe('pool rebuild on refused logins (real tedious client)', () => {
  it('login failed (18456) after a failover: the pool is rebuilt and the publish retried once', async () => {
    const logins = refusableLogins();
    const { server, logger, store } = await faults.start({ onRequest: answer, onLogin: logins.onLogin });
    const publisher = publisherFor(store, logger);
    await publisher.publish([message()]);
    const firstPool = store.poolHolder.current;

    await failover(server); // every pooled connection is gone
    logins.refuse(1); // and the next login is refused
    const id = randomUUID();
    const [outcome] = await publisher.publish([message(id)]);

    expect(outcome).toMatchObject({ id, inserted: true });
    expect(store.poolHolder.rebuilds).toBe(1);
    expect(store.poolHolder.current).not.toBe(firstPool);
    expect(firstPool.connected).toBe(false); // the refused pool was closed
    // the refused attempt never reached the server as a request: exactly one publish of the id arrived
    expect(server.requests.filter((r) => statementOf(r) === 'publish' && idsIn(r).includes(id))).toHaveLength(1);
    // the publisher's own retry was not involved (18456 is not transient)
    expect(logger.logs.some((l) => /failed transiently/.test(l.message))).toBe(false);
  });

  it('retries only once: a login refused again surfaces as ELOGIN after one rebuild', async () => {
    const logins = refusableLogins({ every: true });
    const { server, store } = await faults.start({ onRequest: answer, onLogin: logins.onLogin });
    await store.ensureSchema();
    await failover(server);
    logins.refuse(1); // every login from now on
    const loginsBefore = server.logins.length;

    const err = await store.publish([message()]).catch((e: unknown) => e);

    expect(err).toMatchObject({ name: 'ConnectionError', code: 'ELOGIN' });
    expect(isPoolRejection(err)).toBe(true);
    expect(classifyTransient(err)).toBeNull();
    expect(store.poolHolder.rebuilds).toBe(1);
    // one refused login on the old pool, one on the rebuilt pool's first connection (its connect probe)
    expect(server.logins.length - loginsBefore).toBe(2);
  });

  it('concurrent operations refused together cause one rebuild, and all succeed on the fresh pool', async () => {
    const logins = refusableLogins();
    const { server, store } = await faults.start({ onRequest: answer, onLogin: logins.onLogin }, { poolMax: 4 });
    await store.ensureSchema();
    await failover(server);
    logins.refuse(4);
    const results = await Promise.all(Array.from({ length: 4 }, () => store.publish([message()])));
    expect(results.map((r) => r[0]?.inserted)).toEqual([true, true, true, true]);
    expect(store.poolHolder.rebuilds).toBe(1);
  });

  it('Entra token-credential: "Token is expired" rebuilds the pool, whose new connection fetches a new token', async () => {
    let issued = 0;
    const fetched: string[] = [];
    const credential: TokenCredential = {
      async getToken(): Promise<AccessToken> {
        const token = `token-${++issued}`;
        fetched.push(token);
        return { token, expiresOnTimestamp: Date.now() + 3_600_000 };
      },
    };
    const expired = new Set<string>();
    // no password: Entra through the injected credential, exactly as buildSqlServerConfig wires the real one
    const { server, store } = await faults.start(
      {
        fedAuth: true,
        onRequest: answer,
        onLogin: (login: LoginAttempt) =>
          login.fedAuthToken && expired.has(login.fedAuthToken)
            ? loginFailed("Login failed for user '<token-identified principal>'. Token is expired.")
            : { kind: 'ok' },
      },
      { user: undefined, password: undefined },
      () => credential as never,
    );
    await store.ensureSchema();
    expect(server.logins.every((l) => l.fedAuthToken?.startsWith('token-'))).toBe(true);

    await failover(server);
    expired.add(`token-${issued + 1}`); // the next token the server sees is refused as expired
    const id = randomUUID();
    const [outcome] = await store.publish([message(id)]);

    expect(outcome).toMatchObject({ id, inserted: true });
    expect(store.poolHolder.rebuilds).toBe(1);
    const refused = server.logins.find((l) => expired.has(l.fedAuthToken ?? ''));
    expect(refused).toBeDefined();
    // every physical connection fetched its own token from the one credential; none was reused after the refusal
    expect(new Set(fetched).size).toBe(fetched.length);
    expect(server.logins.map((l) => l.fedAuthToken)).toEqual(fetched);
  });

  it('the whole failover sequence: a dead pooled connection (ECONNRESET, retried with backoff), then a refused login (pool rebuilt)', async () => {
    const logins = refusableLogins();
    const { server, logger, store } = await faults.start({ onRequest: answer, onLogin: logins.onLogin });
    const publisher = publisherFor(store, logger);
    await publisher.publish([message()]);

    server.killAll(); // no pause: the next request is written to a connection the server has just reset
    logins.refuse(1);
    const id = randomUUID();
    const [outcome] = await publisher.publish([message(id)]);

    expect(outcome).toMatchObject({ id, inserted: true });
    expect(logger.logs.filter((l) => /failed transiently/.test(l.message)).map((l) => l.message)).toEqual([
      expect.stringMatching(/attempt 1 failed transiently \(connection\)/),
    ]);
    expect(store.poolHolder.rebuilds).toBe(1);
    // attempt 1 was lost with its connection, attempt 2 arrived: the same id both times
    const attempts = server.requests.filter((r) => statementOf(r) === 'publish' && idsIn(r).includes(id));
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    expect(attempts.length).toBeLessThanOrEqual(2);
  });

  it('a transient login failure is NOT a pool rejection: it is left to the backoff retry', () => {
    const unavailable = Object.assign(new Error("Database 'x' on server 'y' is not currently available. Please retry the connection later."), {
      code: 'ELOGIN',
    });
    expect(isPoolRejection(unavailable)).toBe(false);
    expect(classifyTransient(unavailable)).toBe('failover');
    expect(isPoolRejection(Object.assign(new Error('Token is expired.'), { code: 'ELOGIN' }))).toBe(true);
    expect(isPoolRejection({ number: 37396, class: 16 })).toBe(true);
  });
});
