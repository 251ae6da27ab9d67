// Silence instead of errors: a statement that never returns (ETIMEOUT at the request timeout), a hung server that
// does not even acknowledge the cancel, and a server that accepts TCP but never speaks (connect timeout).
// Every one is a transient 'connection' fault, and the publish retry gives up at the deadline.

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { retryPolicy } from '../../shared/sql/retry';
import { classifyTransient } from '../../shared/sql/transient';
import { ok, silent, stall, type Reply, type SqlRequest } from '../tds/fault-server';
import { catalogSets, faultScope, idsIn, message, publisherFor, statementOf } from './harness';

const REQUEST_TIMEOUT_MS = 250;
const CANCEL_TIMEOUT_MS = 100;
/**
 * The cancel timeout where the server does acknowledge the cancel: long, so that "ended at the request timeout"
 * and "waited out the cancel timeout" stay a second apart, whatever the load on the machine.
 */
const ACKED_CANCEL_TIMEOUT_MS = 1_000;
const QUICK_CONNECTION_RETRY = retryPolicy({ connection: { baseMs: 40, maxMs: 80 } });

const faults = faultScope();

const publishWith = (reply: () => Reply) => (request: SqlRequest) =>
  statementOf(request) === 'catalog' ? ok(...catalogSets()) : statementOf(request) === 'publish' ? reply() : ok();

describe('timeouts (real tedious client)', () => {
  it('a statement that never returns fails with ETIMEOUT at the request timeout; the connection survives the cancel', async () => {
    const { server, store } = await faults.start(
      { onRequest: publishWith(stall) },
      { requestTimeoutMs: REQUEST_TIMEOUT_MS, cancelTimeoutMs: ACKED_CANCEL_TIMEOUT_MS },
    );
    await store.ensureSchema();
    const started = Date.now();

    const err = await store.publish([message()]).catch((e: unknown) => e);
    const elapsed = Date.now() - started;

    expect(err).toMatchObject({ name: 'RequestError', code: 'ETIMEOUT' });
    expect(classifyTransient(err)).toBe('connection');
    expect(elapsed).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 5);
    expect(elapsed).toBeLessThan(REQUEST_TIMEOUT_MS + ACKED_CANCEL_TIMEOUT_MS); // did not wait out the cancel timeout
    expect(server.attentions).toBe(1); // tedious cancelled the statement; the server acknowledged
    expect(server.openConnections).toBeGreaterThanOrEqual(1);
  });

  it('a hung server (no answer, no cancel ack): each attempt fails with ETIMEOUT, the publish gives up at the deadline', async () => {
    const { server, logger, store } = await faults.start(
      { onRequest: publishWith(silent) },
      { requestTimeoutMs: REQUEST_TIMEOUT_MS, cancelTimeoutMs: CANCEL_TIMEOUT_MS },
    );
    await store.ensureSchema();
    const publisher = publisherFor(store, logger, 50, QUICK_CONNECTION_RETRY);
    const id = randomUUID();
    const started = Date.now();
    const deadline = started + 1_200;

    const err = await publisher.publish([message(id)], deadline).catch((e: unknown) => e);
    const finished = Date.now();

    // tedious gave up on the cancel after cancelTimeout and dropped the connection
    expect(err).toMatchObject({ code: 'ETIMEOUT' });
    expect(classifyTransient(err)).toBe('connection');
    const attempts = server.requests.filter((r) => statementOf(r) === 'publish');
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    for (const attempt of attempts) {
      expect(idsIn(attempt)).toEqual([id]);
      expect(attempt.at).toBeLessThan(deadline); // no attempt starts past the budget
    }
    // each attempt took the request timeout plus the cancel timeout (the server never acknowledged the cancel), and
    // the retry's backoff (20-80 ms) on top: 370 ms at least. `at` is when the fake server, in this process, read the
    // request: under load a busy event loop reads one late, shortening the next gap (a CI run saw 347 ms). Without the
    // cancel wait a gap would be the request timeout and the backoff, 330 ms at most: 335 tells the two apart.
    for (let i = 1; i < attempts.length; i++) {
      expect(attempts[i]!.at - attempts[i - 1]!.at).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS + CANCEL_TIMEOUT_MS - 15);
    }
    // it stopped at the deadline: at most the attempt already running when the budget ran out finished after it
    expect(finished).toBeLessThan(deadline + REQUEST_TIMEOUT_MS + CANCEL_TIMEOUT_MS + 200);
    expect(logger.logs.some((l) => /gave up .*invocation budget/.test(l.message))).toBe(true);
  });

  it('a server that accepts TCP but never answers: connect ETIMEOUT, transient, and the retry ends at the deadline', async () => {
    const { server, logger, store } = await faults.start({ mute: true }, { connectTimeoutMs: 300 });
    const publisher = publisherFor(store, logger, 50, QUICK_CONNECTION_RETRY);
    const started = Date.now();
    const deadline = started + 1_000;

    const err = await publisher.publish([message()], deadline).catch((e: unknown) => e);

    expect(err).toMatchObject({ name: 'ConnectionError', code: 'ETIMEOUT' });
    expect(classifyTransient(err)).toBe('connection');
    expect(server.accepted).toBeGreaterThanOrEqual(2); // a fresh connection per attempt
    expect(Date.now()).toBeLessThan(deadline + 300 + 200);
    expect(server.requests).toHaveLength(0);
  });
});
