// A bounded, seeded fuzz run through the local host and the real function table (embedded PGlite): over a
// thousand malformed requests across every route, body field, query parameter and header, plus raw-socket
// requests no fetch client would send. No answer may be >= 500, a refused request may write no row (the
// transport and channel tables are counted around every request), an accepted one must be one of the valid
// controls and write what it answered, every fetch answer must match the OpenAPI document, and the host must
// still answer health at the end. Replay a failure with FUZZ_SEED=<seed>.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openApiDocument } from '../../shared/http/openapi';
import type { PgClient } from '../../shared/stores/postgres/client';
import { queueStateTableName } from '../../shared/stores/queue-state-names';
import { transportNames } from '../../shared/sql/identifiers';
import { DEFAULT_FLOW_STATE_TABLE } from '../../shared/stores/schema-names';
import { deleteWaiterCase, FUZZ_TOPIC_SETTINGS, fuzzCases, Rand, type FuzzCase } from '../support/http-fuzz';
import { openApiAnswers } from '../support/openapi-answers';
import { checkedFetch, startApp, type RunningApp } from './app-harness';

// The app's own embedded database, so the test can count rows in the very tables the app writes.
const captured = vi.hoisted(() => ({ client: undefined as PgClient | undefined }));
vi.mock('../../shared/stores/postgres/connect', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../shared/stores/postgres/connect')>();
  return {
    ...real,
    openPglite: async (dataDir: string) => (captured.client = await real.openPglite(dataDir)),
  };
});

const SEED = Number(process.env.FUZZ_SEED ?? 20261201);
const FETCH_CASES = 1100;
const RAW_CASES = 120;
const KEY = 'fuzz-key-0123456789';
const NEVER = '0 0 0 1 1 *'; // once a year: no timer writes while rows are counted
// The run takes a few seconds on an idle machine; the bound only matters on a starved one
const SLOW_MACHINE_MS = 120_000;

let app: RunningApp;
let port: number;

beforeAll(async () => {
  app = await startApp(
    {
      PGLITE_DATA_DIR: 'memory://',
      E2E_KEEP_STORE: '1', // counts rows with PostgreSQL SQL: stays on PGlite under E2E_STORE=sqlserver
      DRAIN_WORKER_SCHEDULE: NEVER,
      DRAIN_RESPONSES_SCHEDULE: NEVER,
      DRAIN_CALLBACKS_SCHEDULE: NEVER,
      SWEEP_CHANNEL_SCHEDULE: NEVER,
      PRUNE_DEADLETTERS_SCHEDULE: NEVER,
      QUEUE_METRICS_SCHEDULE: NEVER,
      MAX_MESSAGE_BYTES: '2048',
      CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
      CALLBACK_SIGNING_SECRET: 'fuzz-signing-secret-0123456789',
      LOG_LEVEL: 'error',
      ...FUZZ_TOPIC_SETTINGS,
    },
    { functionKey: KEY },
  );
  port = app.host.port;
  expect((await app.api('health')).status).toBe(200); // opens the store (and so the captured client)
  const { getRuntime } = await import('../../shared/runtime');
  await (await getRuntime()).channel.store.ensureSchema(); // the channel tables are created at first use
});
afterAll(async () => {
  await app?.close();
});

interface Rows {
  transport: number;
  messages: number;
  subscribers: number;
  recovery: number;
  /** Paused queues (queue-state rows with paused_at). */
  paused: number;
  /** Flow run ledgers. */
  flows: number;
}

async function rows(): Promise<Rows> {
  const { getRuntime } = await import('../../shared/runtime');
  const { config } = await getRuntime();
  const t = (name: string) => `"${config.schema}"."${name}"`;
  const c = config.channel;
  const r = await captured.client!.query<Rows>(
    `SELECT (SELECT count(*) FROM ${t(config.transportTable)})::int AS transport,
            (SELECT count(*) FROM ${t(c.messageTable)})::int AS messages,
            (SELECT count(*) FROM ${t(c.subscriberTable)})::int AS subscribers,
            (SELECT count(*) FROM ${t(c.recoveryTable)})::int AS recovery,
            (SELECT count(*) FROM ${t(queueStateTableName(transportNames(config.schema, config.transportTable, 'postgres'), 'postgres'))} WHERE paused_at IS NOT NULL)::int AS paused,
            (SELECT count(*) FROM ${t(DEFAULT_FLOW_STATE_TABLE)})::int AS flows`,
  );
  return r.rows[0]!;
}

const delta = (a: Rows, b: Rows): Rows => ({
  transport: b.transport - a.transport,
  messages: b.messages - a.messages,
  subscribers: b.subscribers - a.subscribers,
  recovery: b.recovery - a.recovery,
  paused: b.paused - a.paused,
  flows: b.flows - a.flows,
});
const NONE: Rows = { transport: 0, messages: 0, subscribers: 0, recovery: 0, paused: 0, flows: 0 };

/** What an accepted control may write, from its answer. */
function expectedRows(c: FuzzCase, answer: unknown): Rows {
  switch (c.control) {
    case 'publish':
      return { ...NONE, transport: 1 };
    case 'post-response':
      return { ...NONE, messages: (answer as { duplicate?: boolean }).duplicate ? 0 : 1 };
    case 'register-waiter':
      return { ...NONE, recovery: 1 };
    case 'delete-waiter':
      return { ...NONE, recovery: -1 };
    case 'cancel':
      return { ...NONE, transport: -1 };
    case 'pause':
      return { ...NONE, paused: 1 };
    case 'resume':
      return { ...NONE, paused: -1 };
    default:
      return NONE;
  }
}

function send(c: FuzzCase): Promise<Response> {
  const init: RequestInit & { duplex?: 'half' } = { method: c.method, headers: c.headers };
  if (c.body !== undefined) {
    // bytes, not a string: fetch would add "text/plain" to a string body that has no Content-Type
    const bytes = new TextEncoder().encode(c.body);
    if (c.chunked) {
      init.body = new ReadableStream({ start: (ctl) => (ctl.enqueue(bytes), ctl.close()) });
      init.duplex = 'half';
    } else init.body = bytes;
  }
  return checkedFetch(`${app.url}/api/${c.path}`, init);
}

/** "POST /responses bad payload" for every property of every documented request body. */
function documentedBodyFields(): string[] {
  const doc = openApiDocument() as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: JsonSchema }> } }>>; components: { schemas: Record<string, JsonSchema> } };
  const resolve = (s: JsonSchema): JsonSchema => (s.$ref ? resolve(doc.components.schemas[s.$ref.split('/').pop()!]!) : s.oneOf ? resolve(s.oneOf[0]!) : s);
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).flatMap(([method, op]) =>
      op.requestBody ? Object.keys(resolve(op.requestBody.content['application/json']!.schema).properties ?? {}).map((f) => `${method.toUpperCase()} ${path} bad ${f}`) : [],
    ),
  );
}
interface JsonSchema {
  $ref?: string;
  oneOf?: JsonSchema[];
  properties?: Record<string, unknown>;
}

const describeCase = (c: FuzzCase) => `${c.defect ?? `control ${c.control}`}: ${c.method} /api/${c.path.slice(0, 120)} ${(c.body ?? '').slice(0, 120)}`;

describe(`HTTP fuzz (seed ${SEED})`, () => {
  const failures: string[] = [];
  const tally = { malformed: 0, accepted: 0, statuses: new Map<number, number>() };

  it(`${FETCH_CASES} generated requests: nothing >= 500, refused requests write nothing, accepted ones are valid controls`, async () => {
    const started = Date.now();
    const cpu = process.cpuUsage(); // client, host and PGlite all run in this process: its CPU time ≈ an idle machine's wall time
    const cases = fuzzCases(SEED, FETCH_CASES, { key: KEY, maxMessageBytes: 2048, callbackUrl: 'http://127.0.0.1:9/fuzz' });
    const extra = new Rand(SEED + 1);
    const queue = [...cases];
    let before = await rows();
    const operations = new Set<string>();
    const covered = new Set<string>();
    while (queue.length > 0) {
      const c = queue.shift()!;
      operations.add(c.operation);
      covered.add(`${c.operation} ${c.defect ?? c.control}`);
      if (c.defect) tally.malformed++;
      let res: Response;
      try {
        res = await send(c);
      } catch (err) {
        failures.push(`${describeCase(c)} → ${(err as Error).message}`);
        before = await rows();
        continue;
      }
      tally.statuses.set(res.status, (tally.statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      const after = await rows();
      const wrote = delta(before, after);
      before = after;
      const where = `${describeCase(c)} → ${res.status}`;
      if (res.status >= 500) failures.push(`${where}: a server error ${text.slice(0, 200)}`);
      if (c.defect) {
        if (res.status < 400) failures.push(`${where}: a malformed request was accepted`);
        if (JSON.stringify(wrote) !== JSON.stringify(NONE)) failures.push(`${where}: a refused request wrote rows ${JSON.stringify(wrote)}`);
        continue;
      }
      tally.accepted++;
      if (res.status !== c.expectStatus) {
        failures.push(`${where}: a valid control expected ${c.expectStatus} ${text.slice(0, 200)}`);
        continue;
      }
      const answer: unknown = text === '' ? undefined : JSON.parse(text);
      const expected = expectedRows(c, answer);
      if (JSON.stringify(wrote) !== JSON.stringify(expected)) failures.push(`${where}: wrote ${JSON.stringify(wrote)}, expected ${JSON.stringify(expected)}`);
      if (c.control === 'register-waiter' && extra.chance(0.5)) {
        const { correlationId } = JSON.parse(c.body!) as { correlationId: string };
        queue.unshift(deleteWaiterCase((answer as { registrationId: string }).registrationId, correlationId, KEY));
      }
    }
    const seconds = (Date.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    console.log(
      `fuzz seed ${SEED}: ${cases.length} requests (${tally.malformed} malformed, ${tally.accepted} valid controls) in ${seconds.toFixed(1)} s ` +
        `(${((used.user + used.system) / 1e6).toFixed(1)} s CPU); ` +
        `statuses ${JSON.stringify(Object.fromEntries([...tally.statuses].sort(([a], [b]) => a - b)))}`,
    );
    expect(failures.slice(0, 15), `${failures.length} failures`).toEqual([]);
    // every operation of the document was aimed at, and every documented request body field got bad values
    const documented = Object.entries(openApiAnswers().doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect([...operations].sort()).toEqual(documented.sort());
    const missed = documentedBodyFields().filter((f) => !covered.has(f));
    expect(missed, 'request body fields no bad value was sent for').toEqual([]);
    expect(tally.accepted).toBeGreaterThan(20);
  }, SLOW_MACHINE_MS);

  it(`${RAW_CASES} raw-socket requests (bad Host, truncated and mismatched bodies, bad framing, huge headers): nothing >= 500, nothing written`, async () => {
    const before = await rows();
    const r = new Rand(SEED + 2);
    const key = `x-functions-key: ${KEY}\r\n`;
    const body = '{"payload":{"n":1},"delaySeconds":3600}';
    const kinds: Array<() => { name: string; bytes: string; abortAfterMs?: number; answers: boolean }> = [
      () => ({
        name: 'malformed Host',
        bytes: `POST /api/queues/worker/messages HTTP/1.1\r\nHost: ${r.pick(['a b', 'x:99999', '%', '[::1', 'a@b', 'x:-1', 'a/b', '\u00e9', '[zz]', 'h:80:80'])}\r\n${key}content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        answers: true,
      }),
      () => ({
        name: 'truncated body, then the client goes away',
        bytes: `POST /api/${r.pick(['queues/worker/messages', 'responses', 'waiters'])}?code=${KEY} HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${body.length + 50}\r\n\r\n${body.slice(0, r.int(body.length))}`,
        abortAfterMs: 30,
        answers: false,
      }),
      () => ({
        name: 'Content-Length shorter than the body',
        bytes: `POST /api/queues/worker/messages HTTP/1.1\r\nHost: localhost\r\n${key}content-type: application/json\r\ncontent-length: ${body.length - 1 - r.int(10)}\r\n\r\n${body}`,
        answers: true,
      }),
      () => ({
        name: 'two different Content-Lengths',
        bytes: `POST /api/responses HTTP/1.1\r\nHost: localhost\r\n${key}content-length: 5\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        answers: true,
      }),
      () => ({
        name: 'malformed chunked framing',
        bytes: `POST /api/queues/worker/messages HTTP/1.1\r\nHost: localhost\r\n${key}transfer-encoding: chunked\r\nconnection: close\r\n\r\n${r.pick(['zz', '-1', 'ffffffffffffffffff', '5;\u0000'])}\r\n${body}\r\n0\r\n\r\n`,
        answers: true,
      }),
      () => ({ name: 'invalid header name', bytes: `GET /api/health HTTP/1.1\r\nHost: localhost\r\n${r.pick(['x y', 'x\ty', '(bad)', 'a\u0001'])}: 1\r\nconnection: close\r\n\r\n`, answers: true }),
      () => ({ name: 'a 20 KB header', bytes: `GET /api/queues/worker HTTP/1.1\r\nHost: localhost\r\n${key}x-huge: ${'h'.repeat(20_000)}\r\nconnection: close\r\n\r\n`, answers: true }),
      () => ({ name: 'unknown method', bytes: `${r.pick(['FUZZ', 'GETT', 'get', 'BREW'])} /api/health HTTP/1.1\r\nHost: localhost\r\nconnection: close\r\n\r\n`, answers: true }),
      () => ({ name: 'bad HTTP version', bytes: `GET /api/health ${r.pick(['HTTP/1.7', 'HTTP/0.0', 'HTTX/1.1', 'HTTP/1.1 extra'])}\r\nHost: localhost\r\nconnection: close\r\n\r\n`, answers: true }),
      () => ({ name: 'asterisk target', bytes: `OPTIONS * HTTP/1.1\r\nHost: localhost\r\n${key}connection: close\r\n\r\n`, answers: true }),
      () => ({
        name: 'absolute-form target with a bad body',
        bytes: `POST http://elsewhere.example/api/responses HTTP/1.1\r\nHost: localhost\r\n${key}content-type: application/json\r\ncontent-length: 9\r\nconnection: close\r\n\r\n{"nope":1`,
        answers: true,
      }),
      () => ({
        name: 'Content-Length over the limit, body never sent',
        bytes: `POST /api/queues/worker/messages HTTP/1.1\r\nHost: localhost\r\n${key}${r.chance(0.5) ? 'expect: 100-continue\r\n' : ''}content-type: application/json\r\ncontent-length: ${5 * 1024 * 1024 + r.int(1e6)}\r\n\r\n{"payload":`,
        answers: true,
      }),
      () => ({ name: 'bad Content-Length', bytes: `POST /api/responses HTTP/1.1\r\nHost: localhost\r\n${key}content-length: ${r.pick(['-1', 'abc', '1e3', '0x10', ' '])}\r\nconnection: close\r\n\r\n{}`, answers: true }),
      () => ({ name: 'NUL in the target', bytes: `GET /api/he\u0000alth HTTP/1.1\r\nHost: localhost\r\nconnection: close\r\n\r\n`, answers: true }),
    ];
    const problems: string[] = [];
    let total = 0;
    for (let i = 0; i < RAW_CASES; i++) {
      const kind = kinds[i % kinds.length]!();
      const received = await raw(kind.bytes, kind.abortAfterMs);
      const statuses = [...received.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
      total++;
      if (kind.answers && statuses.length === 0) problems.push(`${kind.name}: no answer`);
      if (statuses.some((s) => s >= 500)) problems.push(`${kind.name}: ${statuses.join(', ')} ${received.slice(0, 300)}`);
      if (kind.answers && statuses.some((s) => s !== 100 && s < 400)) problems.push(`${kind.name}: accepted (${statuses.join(', ')})`);
    }
    tally.malformed += total;
    expect(problems.slice(0, 15), `${problems.length} problems`).toEqual([]);
    expect(delta(before, await rows())).toEqual(NONE);
    expect(tally.malformed).toBeGreaterThanOrEqual(1000);
  }, SLOW_MACHINE_MS);

  it('the host is alive and healthy at the end, and the function key (sent as ?code= too) never reached the log', async () => {
    const res = await app.api('health');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe('ok');
    expect(app.logs.some((l) => l.includes('went away')), 'aborted bodies were logged').toBe(true);
    expect(app.logs.filter((l) => l.includes(KEY))).toEqual([]);
  });
});

/** Writes `bytes` (latin1) on a fresh connection and half-closes it (or drops it after `abortAfterMs`); resolves with what came back. */
function raw(bytes: string, abortAfterMs?: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(received);
    };
    const timer = setTimeout(finish, abortAfterMs ?? 3000);
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('error', finish);
    socket.on('close', finish);
    socket.write(Buffer.from(bytes, 'latin1'));
    // half-close: a request the server is still waiting on ends now instead of after the 3 s guard
    if (abortAfterMs === undefined) socket.end();
  });
}
