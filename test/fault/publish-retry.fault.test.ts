// Publish retries against real driver errors: the real mssql/tedious client talks TDS to the fault server, which
// answers the publish batch with an ERROR token of a chosen number, then with the inserted rows.

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_CLASSES, retryPolicy } from '../../shared/sql/retry';
import { classifyTransient, SQLSERVER_TRANSIENT_NUMBERS } from '../../shared/sql/transient';
import type { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { SQLSERVER_CLASS_OF } from '../support/transient-classes';
import { FaultServer, fail, ok, type Reply, type SqlRequest } from '../tds/fault-server';
import {
  capturingLogger,
  catalogSets,
  connectionTo,
  idsIn,
  message,
  openStore,
  publishAnswer,
  publisherFor,
  retriedClasses,
  statementOf,
} from './harness';

const EXPECTED_CLASS = SQLSERVER_CLASS_OF;

/** Error numbers to answer the next publish requests with, in order; then success. */
let pending: Array<{ number: number; message?: string }> = [];
/** ids the "database" already holds: a successful publish reports them as duplicates. */
const stored = new Set<string>();

function answer(request: SqlRequest): Reply {
  switch (statementOf(request)) {
    case 'catalog':
      return ok(...catalogSets());
    case 'publish': {
      const next = pending.shift();
      if (next) return fail(next.number, 16, next.message);
      const ids = idsIn(request);
      const duplicate = ids.every((id) => stored.has(id));
      ids.forEach((id) => stored.add(id));
      return ok(...publishAnswer(ids, duplicate));
    }
    default:
      return ok();
  }
}

const server = new FaultServer({ onRequest: answer });
const logger = capturingLogger();
let store: SqlServerTransportStore;

const publishesOf = (id: string) => server.requests.filter((r) => statementOf(r) === 'publish' && idsIn(r).includes(id));

beforeAll(async () => {
  const port = await server.start();
  store = openStore(connectionTo(port), logger);
  await store.ensureSchema(); // verified against the fault server's spec-shaped catalog
});

afterAll(async () => {
  await store?.close();
  await server.close();
});

beforeEach(() => {
  pending = [];
  logger.logs.length = 0;
});

describe('publish against injected SQL Server errors (real tedious client)', () => {
  it('covers every one of the 24 curated numbers', () => {
    expect(Object.keys(EXPECTED_CLASS).map(Number).sort((a, b) => a - b)).toEqual([...SQLSERVER_TRANSIENT_NUMBERS].sort((a, b) => a - b));
  });

  it.each(Object.entries(EXPECTED_CLASS).map(([n, cls]) => [Number(n), cls] as const))(
    'transient %i is retried as %s and the second attempt succeeds with the same id',
    async (number, cls) => {
      const publisher = publisherFor(store, logger);
      const id = randomUUID();
      pending = [{ number }];
      const [outcome] = await publisher.publish([message(id)]);
      expect(outcome).toMatchObject({ id, inserted: true });
      expect(outcome?.availableAt).toBeInstanceOf(Date);
      const attempts = publishesOf(id);
      expect(attempts).toHaveLength(2);
      expect(attempts.map((r) => idsIn(r))).toEqual([[id], [id]]);
      expect(retriedClasses(logger.logs)).toEqual([cls]);
    },
  );

  it('reads a negative number back from tedious’s unsigned field (-2 arrives as 4294967294)', async () => {
    pending = [{ number: -2 }];
    const err = await store.publish([message()]).catch((e: unknown) => e);
    expect((err as { number?: number }).number).toBe(2 ** 32 - 2);
    expect(classifyTransient(err)).toBe('connection');
  });

  it.each([207, 2714, 8134, 245])('permanent %i is not retried: one request, the error surfaces', async (number) => {
    const publisher = publisherFor(store, logger, 5);
    const id = randomUUID();
    pending = [{ number }];
    const err = await publisher.publish([message(id)]).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'RequestError', code: 'EREQUEST', number });
    expect(classifyTransient(err)).toBeNull();
    expect(publishesOf(id)).toHaveLength(1);
    expect(retriedClasses(logger.logs)).toEqual([]);
  });

  it.each([2627, 2601])('duplicate key %i is read as success: the insert-if-absent reruns and reports the stored row', async (number) => {
    const publisher = publisherFor(store, logger);
    const id = randomUUID();
    stored.add(id); // a concurrent publisher of the same id won the race
    pending = [{ number, message: `Violation of PRIMARY KEY constraint 'PK_x'. Cannot insert duplicate key (${id}).` }];
    const [outcome] = await publisher.publish([message(id)]);
    expect(outcome).toMatchObject({ id, inserted: false });
    expect(outcome?.availableAt).toBeInstanceOf(Date);
    expect(publishesOf(id)).toHaveLength(2); // the store's race rerun, not a publisher retry
    expect(retriedClasses(logger.logs)).toEqual([]);
  });

  it('a storm of 40501 then success publishes exactly once, with the same id on every attempt', async () => {
    const publisher = publisherFor(store, logger, 10);
    const id = randomUUID();
    const other = randomUUID();
    pending = Array.from({ length: 6 }, () => ({ number: 40501, message: 'The service is currently busy.' }));
    const outcomes = await publisher.publish([message(id), message(other)]);
    expect(outcomes.map((o) => o.inserted)).toEqual([true, true]);
    const attempts = publishesOf(id);
    expect(attempts).toHaveLength(7);
    for (const attempt of attempts) expect(idsIn(attempt).sort()).toEqual([id, other].sort());
    expect(retriedClasses(logger.logs)).toEqual(Array(6).fill('throttling'));
    // exponential, capped: 4 ms base, 16 ms cap, half-jittered at random = 0.5 → 3, 6, 12, 12, …
    const waits = logger.logs.flatMap((l) => /retrying in (\d+) ms/.exec(l.message)?.[1] ?? []).map(Number);
    expect(waits).toEqual([3, 6, 12, 12, 12, 12]);
  });

  it('never sleeps past the deadline: a throttling storm gives up cleanly with the last error', async () => {
    const slow = retryPolicy({ throttling: { baseMs: 200, maxMs: 1_000 } });
    const publisher = publisherFor(store, logger, 100, slow);
    const id = randomUUID();
    pending = Array.from({ length: 100 }, () => ({ number: 40501 }));
    const started = Date.now();
    const deadline = started + 1_000;
    const err = await publisher.publish([message(id)], deadline).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(err).toMatchObject({ number: 40501 });
    expect(elapsed).toBeLessThan(1_000);
    // waits of 150, 300 then 600 ms (random = 0.5): the third would end past the deadline, so it is never started
    expect(publishesOf(id).length).toBeGreaterThanOrEqual(2);
    expect(publishesOf(id).length).toBeLessThanOrEqual(3);
    expect(logger.logs.some((l) => /gave up .*invocation budget/.test(l.message))).toBe(true);
  });

  it('with the default classes a throttled publish never waits under 5 s: with 3 s left it gives up at once', async () => {
    const publisher = publisherFor(store, logger, 3, DEFAULT_RETRY_CLASSES);
    const id = randomUUID();
    pending = [{ number: 40501 }];
    const started = Date.now();
    const err = await publisher.publish([message(id)], started + 3_000).catch((e: unknown) => e);
    expect(err).toMatchObject({ number: 40501 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(publishesOf(id)).toHaveLength(1);
  });
});
