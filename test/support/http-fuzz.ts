// Seeded generation of malformed HTTP requests for every route of the app (test/e2e/http.fuzz.e2e.test.ts).
// Each case is a valid request with one defect that makes it invalid (so it must be refused with a 4xx and
// write nothing), plus random noise that does not change its validity (odd extra headers, query parameters,
// media type spellings, the key as ?code=). A few valid controls are mixed in: those must be accepted, and
// the rows they write are checked against what they answered.

/** mulberry32: a tiny PRNG, so a seed replays the exact same requests. */
export class Rand {
  private a: number;
  constructor(seed: number) {
    this.a = seed >>> 0;
  }
  next(): number {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  uuid(): string {
    const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[this.int(16)]).join('');
    return `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[this.int(4)]}${hex(3)}-${hex(12)}`;
  }
  ascii(max: number): string {
    return Array.from({ length: 1 + this.int(max) }, () => String.fromCharCode(32 + this.int(95))).join('');
  }
}

/** What a valid control does to the tables when accepted. */
export type Control = 'publish' | 'publish-duplicate' | 'post-response' | 'register-waiter' | 'delete-waiter' | 'read' | 'cancel' | 'pause' | 'resume';

export interface FuzzCase {
  /** "POST /queues/{queue}/messages": the operation the request aims at. */
  operation: string;
  method: string;
  /** After /api/, with the query. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Sent as a stream, so without Content-Length (chunked). */
  chunked?: boolean;
  /** What makes it invalid; undefined for a valid control. */
  defect?: string;
  control?: Control;
  /** A control's exact answer. */
  expectStatus?: number;
}

/** The topic the fuzz app configures, with two subscriptions: a wrongly accepted publish would write rows. */
export const FUZZ_TOPIC = 'events';
export const FUZZ_TOPIC_SETTINGS = { TOPICS: FUZZ_TOPIC, TOPIC__events__SUBSCRIPTIONS: 'a,b' };

export interface FuzzSetup {
  key: string;
  /** MAX_MESSAGE_BYTES of the app under test. */
  maxMessageBytes: number;
  /** An allowed callback URL (CALLBACK_ALLOWED_HOSTS). */
  callbackUrl: string;
}

const WRONG_TYPES: unknown[] = [null, true, false, 0, -1, 1.5, 1e300, 'str', [], {}, [1, 2], { a: 1 }];
const BAD_CORRELATION_IDS: unknown[] = [
  null, true, 7, [], {}, ['a'], { id: 'a' }, '', ' lead', 'trail ', '\ttab', 'nul\u0000', 'bell\u0007', 'del\u007f', 'c1\u0085',
  'lone\ud800', '\udc00lone', 'x'.repeat(401), 'y'.repeat(5000), '🙂'.repeat(201),
];
const BAD_UUIDS: unknown[] = [
  ...WRONG_TYPES, '', 'nope', '123', 'not-a-uuid', '0f90ca46-76ab-4e35-8c8b-f45638963c7', '0f90ca46-76ab-4e35-8c8b-f45638963c75x',
  '{0f90ca46-76ab-4e35-8c8b-f45638963c75}', '0f90ca4676ab4e358c8bf45638963c75', 'g0000000-0000-0000-0000-000000000000', ' 0f90ca46-76ab-4e35-8c8b-f45638963c75',
];
const BAD_JSON_TEXTS = ['{', '[', '}', 'nul', 'tru', "{'payload':1}", '{"payload":1,}', '{"payload":NaN}', '{"payload":undefined}', '{payload:1}',
  '{"payload":1}}', '{"payload":1} {"payload":2}', '// c\n{"payload":1}', '{"payload":"\\x41"}', '{"a":"\u0001\n"', '\u0000', '"unterminated', '[1,2', '{"payload":01}', '+1', '.5', '0x10', 'Infinity', '-'];
const BAD_MEDIA_TYPES = ['text/plain', 'application/xml', 'text/json', 'application/jsonx', 'multipart/form-data; boundary=x', 'application/octet-stream',
  'application/json; charset=iso-8859-1', 'application/json; charset=utf-16', 'application/json; charset="latin1"', 'image/png', 'a/b/c', 'text/html; charset=utf-8'];
const NEUTRAL_JSON_TYPES = ['application/json', 'APPLICATION/JSON', 'application/json; charset=utf-8', 'application/json;charset=UTF-8', 'application/vnd.fuzz+json', 'application/json; charset="utf-8"'];
const UNKNOWN_QUEUES = ['nosuch', 'WORKER', 'Worker', 'worker%20', '%20worker', 'worker.', 'worker%2Fx', '%E2%9C%93', 'q'.repeat(300), '%zz', '%00', 'dead', 'response%00'];
const BAD_PATH_IDS = ['nope', '123', '0f90ca46-76ab-4e35-8c8b-f45638963c7', '%7B0f90ca46-76ab-4e35-8c8b-f45638963c75%7D', '%zz', 'x'.repeat(1000), '%00', 'null', '..%2F..'];
const BAD_TOPS = ['0', '1001', '-1', '1.5', 'abc', '', '%20', '1e2', '0x10', '99999999999999999999', '+5', '5%20'];
const BAD_WAITS = ['-1', 'abc', '1e2', '0x10', '', '%20', 'NaN', 'Infinity', '-0.5', '1,5', '2s'];
// methods fetch can send and Node's parser knows (an unknown method is a raw-socket case)
const OTHER_METHODS = ['PUT', 'PATCH', 'OPTIONS', 'PROPFIND', 'MKCOL'];

const enc = encodeURIComponent;
const json = (v: unknown) => JSON.stringify(v);

interface Base {
  operation: string;
  method: string;
  /** Builds the path; queue and id may be replaced by a defect. */
  path: (p: { queue: string; id: string }) => string;
  /** A valid JSON body as an object (body routes only); `field` is the one about to get a bad value. */
  body?: (field?: string) => Record<string, unknown>;
  /** Field → invalid values (each one alone makes the body invalid). */
  fields?: Record<string, unknown[]>;
  /** Required fields: leaving one out is a defect. */
  required?: string[];
  keyed: boolean;
  hasQueue?: boolean;
  /** The valid values of the {queue} (or {topic}) segment; default worker and response. */
  validQueues?: string[];
  hasId?: boolean;
  /** The {id} a case uses unless a defect replaces it (default a random UUID, which names nothing). */
  validId?: () => string;
  /** Malformed values of the {id} segment (default BAD_PATH_IDS). */
  badIds?: string[];
  /** Whole paths with one bad segment the others do not cover (a flow control's action). */
  badPaths?: Array<() => string>;
  /** Query defects: each builds a whole query string. */
  queries?: Array<() => string>;
  validQuery?: () => string;
}

export function fuzzCases(seed: number, count: number, setup: FuzzSetup): FuzzCase[] {
  const r = new Rand(seed);
  const big = (n: number) => 'z'.repeat(n);
  const published: string[] = [];
  /** A job a publish control wrote (still waiting: delayed an hour, no drain runs), else a UUID naming nothing. */
  const publishedId = () => (published.length > 0 ? r.pick(published) : r.uuid());
  const bases: Base[] = [
    {
      operation: 'POST /queues/{queue}/messages',
      method: 'POST',
      path: ({ queue }) => `queues/${queue}/messages`,
      body: () => ({ payload: { n: r.int(1000) }, delaySeconds: 3600 }),
      fields: {
        payload: [big(setup.maxMessageBytes + 10)],
        id: BAD_UUIDS,
        correlationId: BAD_CORRELATION_IDS,
        headers: [...WRONG_TYPES.filter((v) => typeof v !== 'object' || v === null || Array.isArray(v) || Object.keys(v).length > 0), { a: 1 }, { a: null },
          { '': 'v' }, { 'AR-X': 'v' }, { 'ar-correlation-id': 'x' }, { x: 'a\nb' }, { 'n\u0001': 'v' }, { x: '\ud800' }, JSON.parse('{"__proto__":"x"}'),
          Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`h${i}`, 'v'])), { big: big(17 * 1024) }, { [big(257)]: 'v' }],
        delaySeconds: [-1, -0.001, 315360001, 1e308, '10', null, true, [], {}, 'soon'],
        // a dedup field alone is refused too (a window or mode needs a key; a topic publish takes none)
        dedupKey: ['', big(201), 1, null, [], {}, 'a\nb', '\ud800'],
        dedupWindowSeconds: [-1, 0, 2592001, 1e308, '10', null, true, [], {}],
        dedupMode: ['', 'DROP', 'throttle', 1, null, [], {}],
        priority: [32768, -32769, 1.5, '3', null, true, [], {}, 1e308],
        // a topic publish refuses any ordering key (they belong to a queue publish)
        orderingKey: ['', big(201), 1, null, [], {}, 'a\nb', '\ud800'],
        // the base body is delayed an hour: an expiry before then is refused as well
        expiresAt: ['2000-01-01T00:00:00Z', 'soon', '2100-01-01', '2100-01-01T00:00:00', 1, null, [], {}],
        ttlSeconds: [0, -1, 10, 315360001, 1e308, '10', null, true, [], {}],
      },
      required: ['payload'],
      keyed: true,
      hasQueue: true,
    },
    { operation: 'GET /queues/{queue}', method: 'GET', path: ({ queue }) => `queues/${queue}`, keyed: true, hasQueue: true },
    {
      operation: 'GET /queues/{queue}/deadletters',
      method: 'GET',
      path: ({ queue }) => `queues/${queue}/deadletters`,
      keyed: true,
      hasQueue: true,
      queries: [...BAD_TOPS.map((t) => () => `top=${t}`), () => 'top=1&top=2', () => `top=${r.pick(BAD_TOPS)}&zz=1`],
      validQuery: () => (r.chance(0.5) ? '' : `top=${1 + r.int(1000)}`),
    },
    { operation: 'POST /queues/{queue}/deadletters/{id}/requeue', method: 'POST', path: ({ queue, id }) => `queues/${queue}/deadletters/${id}/requeue`, keyed: true, hasQueue: true, hasId: true },
    { operation: 'DELETE /queues/{queue}/deadletters/{id}', method: 'DELETE', path: ({ queue, id }) => `queues/${queue}/deadletters/${id}`, keyed: true, hasQueue: true, hasId: true },
    {
      operation: 'POST /responses',
      method: 'POST',
      path: () => 'responses',
      body: () => ({ correlationId: `fuzz-rsp-${r.int(1e9)}`, payload: r.pick([null, 1, 'x', [1], { a: 1 }]) }),
      fields: {
        correlationId: BAD_CORRELATION_IDS,
        payload: [big(setup.maxMessageBytes + 10)],
        id: BAD_UUIDS,
        final: [null, 'true', 1, 0, [], {}, 'false'],
        error: [null, '', big(4001), 1, {}, [], true],
      },
      required: ['correlationId', 'payload'],
      keyed: true,
    },
    {
      operation: 'GET /responses',
      method: 'GET',
      path: () => 'responses',
      keyed: true,
      queries: [
        () => '',
        () => 'waitSeconds=0',
        () => 'correlationId=',
        () => `correlationId=${enc(r.pick(BAD_CORRELATION_IDS.filter((v): v is string => typeof v === 'string' && v !== '' && isWellFormed(v))))}&waitSeconds=0`,
        () => `correlationId=ok-${r.int(1e6)}&waitSeconds=${enc(r.pick(BAD_WAITS))}`,
        () => `correlationId=ok-${r.int(1e6)}&waitSeconds=0&waitSeconds=1`,
        () => 'correlationid=lowercase-name&waitSeconds=0',
      ],
      validQuery: () => `correlationId=fuzz-none-${r.int(1e9)}&waitSeconds=0`,
    },
    {
      operation: 'POST /waiters',
      method: 'POST',
      path: () => 'waiters',
      body: () => ({ correlationId: `fuzz-cb-${r.int(1e9)}`, callbackUrl: setup.callbackUrl }),
      fields: {
        correlationId: BAD_CORRELATION_IDS,
        callbackUrl: [...WRONG_TYPES, '', 'not a url', 'ftp://127.0.0.1/x', 'http://example.com/x', 'https://evil.example/x', 'http://user:pw@127.0.0.1/x',
          `https://127.0.0.1/${big(2050)}`, 'javascript:alert(1)', '//127.0.0.1/x', 'http://127.0.0.2/x'],
        ttlSeconds: [0, -1, 0.5, 315360001, '60', null, true, [], {}, 1e308],
      },
      required: ['correlationId', 'callbackUrl'],
      keyed: true,
    },
    {
      operation: 'DELETE /waiters/{registrationId}',
      method: 'DELETE',
      path: ({ id }) => `waiters/${id}`,
      keyed: true,
      hasId: true,
      queries: [() => '', () => 'correlationId=', () => `correlationId=${enc(' lead')}`, () => `correlationId=${enc('x'.repeat(401))}`, () => 'correlationId=%00'],
      validQuery: () => `correlationId=fuzz-cb-${r.int(1e9)}`,
    },
    { operation: 'GET /health', method: 'GET', path: () => 'health', keyed: false },
    { operation: 'GET /openapi.json', method: 'GET', path: () => 'openapi.json', keyed: true },
  ];
  // topics: the fuzz app configures the topic `events` (FUZZ_TOPIC_SETTINGS); {queue} stands for the topic
  bases.push(
    { ...bases[0]!, operation: 'POST /topics/{topic}/messages', path: ({ queue }) => `topics/${queue}/messages`, validQueues: [FUZZ_TOPIC] },
    { operation: 'GET /topics/{topic}/subscriptions', method: 'GET', path: ({ queue }) => `topics/${queue}/subscriptions`, keyed: true, hasQueue: true, validQueues: [FUZZ_TOPIC] },
    { operation: 'GET /topics', method: 'GET', path: () => 'topics', keyed: true },
  );
  // the dashboard: its page and files (anonymous; {queue} stands for the file name) and its two read-only routes
  bases.push(
    { operation: 'GET /queues', method: 'GET', path: () => 'queues', keyed: true },
    { operation: 'GET /channel', method: 'GET', path: () => 'channel', keyed: true },
    { operation: 'GET /dashboard', method: 'GET', path: () => 'dashboard', keyed: false },
    { operation: 'GET /dashboard/{file}', method: 'GET', path: ({ queue }) => `dashboard/${queue}`, keyed: false, hasQueue: true, validQueues: ['app.js', 'app.css'] },
  );

  // schedules: no schedule named here ever exists (every PUT below is malformed), so a wrong method on these paths
  // (GET, DELETE, pause) finds nothing to read or change
  const schedulePath = ({ queue }: { queue: string }) => `schedules/${queue}`;
  bases.push(
    {
      operation: 'PUT /schedules/{name}',
      method: 'PUT',
      path: schedulePath,
      validQueues: ['fuzz-never'],
      body: () => ({ queue: 'worker', cron: '0 0 0 1 1 *', payload: { n: r.int(1e6) } }),
      fields: {
        queue: [...WRONG_TYPES, '', 'no-such-queue'],
        topic: ['no-such-topic', FUZZ_TOPIC, 1],
        cron: [...WRONG_TYPES, '', '61 * * * * *', '* * *', '@daily', '0 0 0 30 2 *'],
        timeZone: [1, '', ' UTC', 'Nowhere/Atlantis', null],
        payload: [big(setup.maxMessageBytes + 10)],
        correlationId: BAD_CORRELATION_IDS,
        headers: [1, 'x', [], { 'AR-Schedule': 'x' }, { a: 1 }],
        paused: ['true', 1, null, []],
        misfire: ['catch', { catchUp: 0 }, { catchUp: 1.5 }, { catchUp: 1001 }, 1, null, {}],
      },
      required: ['cron'],
      keyed: true,
    },
    { operation: 'GET /schedules/{name}', method: 'GET', path: schedulePath, validQueues: ['fuzz-never'], keyed: true },
    { operation: 'DELETE /schedules/{name}', method: 'DELETE', path: schedulePath, validQueues: ['fuzz-never'], keyed: true },
    { operation: 'POST /schedules/{name}/pause', method: 'POST', path: ({ queue }) => `schedules/${queue}/pause`, validQueues: ['fuzz-never'], keyed: true },
    { operation: 'POST /schedules/{name}/resume', method: 'POST', path: ({ queue }) => `schedules/${queue}/resume`, validQueues: ['fuzz-never'], keyed: true },
    { operation: 'GET /schedules', method: 'GET', path: () => 'schedules', keyed: true },
  );
  const listSchedulesBase = bases.at(-1)!;
  // a queue's waiting jobs (appended: the controls below pick bases by index)
  bases.push(
    {
      operation: 'GET /queues/{queue}/messages',
      method: 'GET',
      path: ({ queue }) => `queues/${queue}/messages`,
      keyed: true,
      hasQueue: true,
      queries: [
        ...[...BAD_TOPS, '101'].map((t) => () => `top=${t}`),
        () => 'top=1&top=2',
        ...['', 'Ready', 'leased', 'dead', '%20ready'].map((v) => () => `state=${v}`),
        ...['', 'Oldest', 'asc', 'newest%20'].map((v) => () => `order=${v}`),
        () => 'state=ready&state=delayed',
        () => `state=${r.pick(['ready', 'delayed'])}&order=sideways`,
      ],
      validQuery: () => [r.chance(0.5) ? '' : `top=${1 + r.int(100)}`, r.chance(0.5) ? '' : `state=${r.pick(['ready', 'delayed'])}`, r.chance(0.5) ? '' : `order=${r.pick(['oldest', 'newest'])}`].filter((q) => q !== '').join('&'),
    }
  );
  const waitingJobs = bases[bases.length - 1]!;

  // job control. Cancel and reschedule aim at jobs the publish controls wrote, so a wrongly accepted defect
  // deletes a row or answers 200; pause and resume aim at the internal callbacks queue, which no other case uses
  // (a pause is counted as a write: only the pause+resume control pair may change it)
  bases.push(
    {
      operation: 'DELETE /queues/{queue}/messages/{id}',
      method: 'DELETE',
      path: ({ queue, id }) => `queues/${queue}/messages/${id}`,
      keyed: true,
      hasQueue: true,
      validQueues: ['worker'],
      hasId: true,
      validId: publishedId,
      queries: ['', 'TRUE', 'yes', '1', '0', 'True', 'true%20', '%00', 'null'].map((v) => () => `running=${v}`),
      validQuery: () => r.pick(['', 'running=true', 'running=false']),
    },
    {
      operation: 'POST /queues/{queue}/messages/{id}/reschedule',
      method: 'POST',
      path: ({ queue, id }) => `queues/${queue}/messages/${id}/reschedule`,
      // far in the future either way, so a rescheduled control job stays delayed
      body: (field) => (field === 'availableAt' || (field === undefined && r.chance(0.5)) ? { availableAt: `${2100 + r.int(100)}-06-01T00:00:00Z` } : { delaySeconds: 3600 + r.int(86400) }),
      fields: {
        delaySeconds: [-1, -0.001, 315360001, 1e308, '10', null, true, [], {}, 'soon'],
        availableAt: [...WRONG_TYPES, '', 'tomorrow', '2026-12-24T18:00:00', '2026-12-24', '2026-13-01T00:00:00Z', '2026-12-24T25:00:00Z', '1969-12-31T23:59:59Z',
          '10000-01-01T00:00:00Z', '2026-12-24T18:00:00+2:00', ' 2026-12-24T18:00:00Z', '2026-12-24T18:00:00.1234567890Z', '2026-12-24 18:00:00Z'],
      },
      keyed: true,
      hasQueue: true,
      validQueues: ['worker'],
      hasId: true,
      validId: publishedId,
    },
    { operation: 'POST /queues/{queue}/pause', method: 'POST', path: ({ queue }) => `queues/${queue}/pause`, keyed: true, hasQueue: true, validQueues: ['callbacks'] },
    { operation: 'POST /queues/{queue}/resume', method: 'POST', path: ({ queue }) => `queues/${queue}/resume`, keyed: true, hasQueue: true, validQueues: ['callbacks'] },
  );
  const [cancelBase, rescheduleBase, pauseBase, resumeBase] = bases.slice(-4) as [Base, Base, Base, Base];

  // flows: the app registers example-approval. No run is ever started (every start below is refused: a wrongly
  // accepted one writes a start job and a ledger, which the test counts), so every run id names nothing
  const FLOW = 'example-approval';
  const flowIds = ['%20lead', 'trail%20', 'a%2Fb', 'a%5Cb', 'a%3Fb', 'a%23b', '%00', 'tab%09', 'del%7F', 'x'.repeat(401), '%E0%A0%80'.repeat(350), '%zz'];
  const flowId = () => `fuzz-never-${r.int(1e9)}`;
  bases.push(
    {
      // restart's body (the other actions take none): fromStep, a step name
      operation: 'POST /flows/{name}/{id}/{action}',
      method: 'POST',
      path: ({ queue, id }) => `flows/${queue}/${id}/restart`,
      body: () => ({ fromStep: r.pick(['reserve', 'approve', 'cool-off']) }),
      fields: { fromStep: [1, null, true, [], {}, '', 'x'.repeat(201)] },
      keyed: true,
      hasQueue: true,
      validQueues: [FLOW],
      hasId: true,
      validId: flowId,
      badIds: flowIds,
    },
    {
      operation: 'GET /flows',
      method: 'GET',
      path: () => 'flows',
      keyed: true,
      queries: [
        ...['', 'running', 'RUNNING', 'Done', 'Running%20', 'Cancelled'].map((v) => () => `status=${v}`),
        ...['', 'nosuch', 'Example-approval', `${FLOW}%20`].map((v) => () => `flow=${v}`),
        ...[...BAD_TOPS, '201'].map((t) => () => `limit=${t}`),
        () => `status=${r.pick(['Running', 'Failed'])}&limit=0`,
        // a cursor is opaque: only one this store returned is valid
        ...['nope', '%00', 'W10', 'WzEsMl0', Buffer.from('["x","y"]').toString('base64url'), Buffer.from('["2026-13-45T99:00:00Z","y"]').toString('base64url'),
          Buffer.from('["2026-01-01T00:00:00Z"]').toString('base64url'), Buffer.from('{"a":1}').toString('base64url'), 'x'.repeat(5000)].map((c) => () => `cursor=${c}`),
      ],
      validQuery: () => [r.chance(0.5) ? '' : `status=${r.pick(['Running', 'Succeeded', 'Failed', 'Suspended'])}`, r.chance(0.5) ? '' : `flow=${FLOW}`, r.chance(0.5) ? '' : `limit=${1 + r.int(200)}`].filter((q) => q !== '').join('&'),
    },
    {
      operation: 'GET /flows/{name}/{id}',
      method: 'GET',
      path: ({ queue, id }) => `flows/${queue}/${id}`,
      keyed: true,
      hasQueue: true,
      validQueues: [FLOW],
      hasId: true,
      validId: flowId,
      badIds: flowIds,
      queries: BAD_WAITS.map((w) => () => `waitSeconds=${enc(w)}`),
      validQuery: () => r.pick(['', 'waitSeconds=0']),
    },
    {
      operation: 'POST /flows/{name}',
      method: 'POST',
      path: ({ queue }) => `flows/${queue}`,
      validQueues: [FLOW],
      hasQueue: true,
      body: () => ({ input: { item: `fuzz-${r.int(1e6)}`, coolOffSeconds: 0 }, id: flowId() }),
      fields: {
        // any JSON is an input; only one nested deeper than the body scanner allows (MAX_JSON_DEPTH 128) is not
        input: [nested(200), [nested(130)]],
        id: [1, null, true, [], {}, '', ' lead', 'trail ', 'a/b', 'a\\b', 'a?b', 'a#b', 'nul\u0000', 'c1\u0085', 'lone\ud800', 'x'.repeat(401), '\u0800'.repeat(350)],
      },
      keyed: true,
    },
    {
      operation: 'POST /flows/{name}/{id}/{action}',
      method: 'POST',
      path: ({ queue, id }) => `flows/${queue}/${id}/${r.pick(['suspend', 'resume', 'cancel'])}`,
      keyed: true,
      hasQueue: true,
      validQueues: [FLOW],
      hasId: true,
      validId: flowId,
      badIds: flowIds,
      badPaths: ['', 'Suspend', 'pause', 'start', 'cancel%20', '%00', 'x'.repeat(300)].map((a) => () => `flows/${FLOW}/${flowId()}/${a}`),
    },
  );
  const listFlowsBase = bases.at(-4)!;

  // job lookup and the history search (issue 16 §2): the published (delayed) jobs are found by id
  const cursorOf = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  bases.push(
    { operation: 'GET /jobs/{id}', method: 'GET', path: ({ id }) => `jobs/${id}`, keyed: true, hasId: true, validId: publishedId },
    {
      operation: 'GET /jobs',
      method: 'GET',
      path: () => 'jobs',
      keyed: true,
      queries: [
        // neither queue nor correlationId; an unconfigured queue; a state the history does not hold
        () => '',
        () => r.pick(['state=completed', 'top=5', 'since=2026-01-01T00:00:00Z']),
        ...UNKNOWN_QUEUES.map((q) => () => `queue=${q}`),
        ...['ready', 'delayed', 'leased', 'dead-lettered', 'Completed', 'completed%20', 'x'.repeat(300)].map((v) => () => `queue=worker&state=${v}`),
        ...BAD_TOPS.filter((t) => t !== '').concat(['501']).map((t) => () => `queue=worker&top=${t}`),
        ...['tomorrow', '2026-12-24', '2026-12-24T18:00:00', '2026-13-01T00:00:00Z', '1e9', '%20'].map((v) => () => `queue=worker&${r.pick(['since', 'until'])}=${v}`),
        () => 'queue=worker&since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z',
        () => 'queue=worker&queue=worker',
        () => 'correlationId=a&correlationId=b',
        ...['nope', '%00', 'W10', cursorOf(['x', 'y']), cursorOf(['2026-13-45T99:00:00Z', r.uuid()]), cursorOf(['2026-01-01T00:00:00Z']), cursorOf({ a: 1 }), 'x'.repeat(5000)].map(
          (c) => () => `queue=worker&cursor=${c}`,
        ),
      ],
      validQuery: () =>
        [r.pick(['queue=worker', 'queue=response', `correlationId=fuzz-${r.int(1e6)}`]), r.chance(0.5) ? '' : 'state=completed', r.chance(0.5) ? '' : `top=${1 + r.int(500)}`, r.chance(0.3) ? '' : 'since=2026-01-01T00:00:00Z']
          .filter((q) => q !== '')
          .join('&'),
    },
  );
  const [getJobBase, listJobsBase] = bases.slice(-2) as [Base, Base];

  const cases: FuzzCase[] = [];
  const fieldTurns = new Map<string, number>();
  const registered: Array<{ id: string; correlationId: string }> = [];

  const queryOf = (b: Base) => b.validQuery?.() ?? '';
  const assemble = (b: Base, o: { queue?: string; id?: string; query?: string; body?: string; headers?: Record<string, string>; method?: string; noKey?: boolean; chunked?: boolean; path?: string }): FuzzCase => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    let query = o.query ?? queryOf(b);
    if (b.keyed && !o.noKey) {
      if (r.chance(0.2)) query = query === '' ? `code=${setup.key}` : `${query}&code=${setup.key}`;
      else headers['x-functions-key'] = setup.key;
    }
    if (o.body !== undefined && headers['content-type'] === undefined && r.chance(0.9)) headers['content-type'] = r.pick(NEUTRAL_JSON_TYPES);
    addNoise(headers);
    if (r.chance(0.15)) query = query === '' ? `zz=${enc(r.ascii(30))}` : `${query}&zz=${enc(r.ascii(30))}`;
    const path = (o.path ?? b.path({ queue: o.queue ?? r.pick(b.validQueues ?? ['worker', 'response']), id: o.id ?? b.validId?.() ?? r.uuid() })) + (query === '' ? '' : `?${query}`);
    const method = o.method ?? b.method;
    const body = method === 'GET' || method === 'HEAD' ? undefined : o.body; // fetch sends no body with these
    return { operation: b.operation, method, path, headers, ...(body !== undefined ? { body } : {}), ...(o.chunked ? { chunked: true } : {}) };
  };
  const addNoise = (headers: Record<string, string>) => {
    for (let i = r.int(3); i > 0; i--) {
      const kind = r.int(4);
      if (kind === 0) headers[`x-fuzz-${r.int(100)}`] = r.ascii(r.chance(0.1) ? 4000 : 40);
      else if (kind === 1) headers.accept = r.pick(['*/*', 'text/html', 'application/xml', 'application/problem+json', 'nonsense']);
      else if (kind === 2) headers['user-agent'] = r.ascii(200);
      else headers['accept-language'] = r.pick(['en', '*', 'zz-ZZ;q=2', ',,,']);
    }
  };

  const pathOf = (b: Base) => b.operation.slice(b.operation.indexOf(' ') + 1);
  const methodsAt = (b: Base) => bases.filter((x) => pathOf(x) === pathOf(b)).map((x) => x.method);
  const defects: Array<(b: Base) => FuzzCase | undefined> = [
    // the key
    (b) => (b.keyed ? { ...assemble(b, { ...validParts(b), noKey: true }), defect: 'no function key' } : undefined),
    (b) => (b.keyed ? { ...assemble(b, { ...validParts(b), noKey: true, headers: { 'x-functions-key': r.pick(['', 'wrong', setup.key.toUpperCase(), `${setup.key}x`, setup.key.slice(1), big(300)]) } }), defect: 'wrong function key' } : undefined),
    (b) => (b.keyed ? { ...assemble(b, { ...validParts(b), noKey: true, query: appendQuery(queryOf(b), `code=${enc(r.pick(['x', setup.key.slice(0, -1), `${setup.key}x`]))}`) }), defect: 'wrong ?code=' } : undefined),
    // the method
    // a method the route's path does not serve (GET and POST /queues/{queue}/messages are both valid)
    (b) => ({ ...assemble(b, { ...validParts(b), method: r.pick(OTHER_METHODS.concat(b.method === 'GET' ? ['POST', 'DELETE'] : ['GET']).filter((m) => !methodsAt(b).includes(m))) }), defect: 'wrong method' }),
    // the path
    (b) => (b.hasQueue ? { ...assemble(b, { ...validParts(b), queue: r.pick(UNKNOWN_QUEUES) }), defect: 'unknown queue' } : undefined),
    (b) => (b.hasId ? { ...assemble(b, { ...validParts(b), id: r.pick(b.badIds ?? BAD_PATH_IDS) }), defect: 'malformed id' } : undefined),
    (b) => (b.hasId ? { ...assemble(b, { ...validParts(b), id: b.validId === publishedId ? r.uuid() : undefined }), defect: 'unknown id' } : undefined),
    (b) => (b.badPaths ? { ...assemble(b, { ...validParts(b), path: r.pick(b.badPaths)() }), defect: 'bad path segment' } : undefined),
    (b) => ({ ...assemble(b, validParts(b)), path: `${b.path({ queue: 'worker', id: r.uuid() })}/${r.pick(['x', 'extra/segments', '%zz', '%2F'])}`, defect: 'unknown path' }),
    // the query
    (b) => (b.queries ? { ...assemble(b, { ...validParts(b), query: r.pick(b.queries)() }), defect: 'bad query' } : undefined),
    // the body
    (b) => (b.body ? { ...assemble(b, { body: r.pick(BAD_JSON_TEXTS) }), defect: 'not JSON' } : undefined),
    (b) => (b.body ? { ...assemble(b, { body: truncate(json(b.body()), r) }), defect: 'truncated JSON' } : undefined),
    (b) => (b.body ? { ...assemble(b, { body: r.pick(['', ' ', '\n\t  ']) }), defect: 'empty body' } : undefined),
    (b) => (b.body ? { ...assemble(b, { body: json(b.body()), headers: { 'content-type': r.pick(BAD_MEDIA_TYPES) } }), defect: 'bad media type or charset' } : undefined),
    (b) => (b.body ? { ...assemble(b, { body: 'a=1&b=2', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), defect: 'a form body' } : undefined),
    (b) => (b.body ? { ...assemble(b, { body: json(b.body()), chunked: true }), defect: 'chunked (no Content-Length)' } : undefined),
    (b) => (b.body ? { ...assemble(b, { body: json(r.pick([1, 'str', true, null, b.operation.includes('messages') ? [] : [b.body()]])) }), defect: 'body of the wrong shape' } : undefined),
    (b) => (b.body ? { ...assemble(b, { body: json({ ...b.body(), [r.pick(['bogus', 'Payload', 'CORRELATIONID', '', 'payload '])]: 1 }) }), defect: 'unknown field' } : undefined),
    (b) => {
      if (!b.required) return undefined;
      const body = b.body!();
      const field = r.pick(b.required);
      delete body[field];
      return { ...assemble(b, { body: json(body) }), defect: `missing ${field}` };
    },
    (b) => {
      if (!b.fields) return undefined;
      // the fields take turns, so every one gets bad values in any run of a few hundred cases
      const names = Object.keys(b.fields);
      const turn = fieldTurns.get(b.operation) ?? r.int(names.length);
      fieldTurns.set(b.operation, turn + 1);
      const field = names[turn % names.length]!;
      const body = { ...b.body!(field), [field]: r.pick(b.fields[field]!) };
      return { ...assemble(b, { body: json(body) }), defect: `bad ${field}` };
    },
    (b) => {
      if (!b.operation.startsWith('POST ') || !b.operation.includes('messages')) return undefined;
      const item = () => ({ payload: r.int(9), delaySeconds: 3600 });
      const id = r.uuid();
      const bad = r.pick([
        () => [],
        () => Array.from({ length: 101 }, item),
        () => [item(), { ...item(), id: r.pick(BAD_UUIDS) }],
        () => [item(), { nope: true }],
        () => [{ ...item(), id }, { ...item(), id: id.toUpperCase() }],
        () => [item(), null],
        () => [[item()]],
      ])();
      return { ...assemble(b, { body: json(bad) }), defect: 'bad batch' };
    },
  ];

  function validParts(b: Base): { body?: string; query?: string } {
    return { ...(b.body ? { body: json(b.body()) } : {}), query: queryOf(b) };
  }

  const controls: Array<() => FuzzCase> = [
    () => {
      const id = r.uuid();
      published.push(id);
      const b = bases[0]!;
      return { ...assemble(b, { queue: 'worker', body: json({ payload: { fuzz: r.ascii(20) }, id, delaySeconds: 3600 }) }), control: 'publish', expectStatus: 201 };
    },
    () => {
      const b = bases[0]!;
      if (published.length === 0) return controls[0]!();
      return { ...assemble(b, { queue: 'worker', body: json({ payload: 'again', id: r.pick(published), delaySeconds: 3600 }) }), control: 'publish-duplicate', expectStatus: 200 };
    },
    () => ({ ...assemble(bases[5]!, { body: json({ correlationId: `fuzz-ok-${r.int(1e9)}`, payload: { v: r.ascii(10) } }) }), control: 'post-response', expectStatus: 202 }),
    () => ({ ...assemble(bases[7]!, { body: json({ correlationId: `fuzz-reg-${cases.length}`, callbackUrl: setup.callbackUrl, ttlSeconds: 600 }) }), control: 'register-waiter', expectStatus: 201 }),
    () => ({ ...assemble(r.pick([bases[1]!, bases[2]!, bases[9]!, bases[10]!]), {}), control: 'read', expectStatus: 200 }),
    () => ({ ...assemble(bases[6]!, {}), control: 'read', expectStatus: 204 }),
    () => ({ ...assemble(r.pick([bases[12]!, bases[13]!]), {}), control: 'read', expectStatus: 200 }),
    () => ({ ...assemble(listSchedulesBase, {}), control: 'read', expectStatus: 200 }),
    () => ({ ...assemble(waitingJobs, { queue: r.pick(['worker', 'response']) }), control: 'read', expectStatus: 200 }),
    () => ({ ...assemble(listFlowsBase, {}), control: 'read', expectStatus: 200 }),
    () => (published.length === 0 ? controls[0]!() : { ...assemble(getJobBase, { id: r.pick(published) }), control: 'read', expectStatus: 200 }),
    () => ({ ...assemble(listJobsBase, {}), control: 'read', expectStatus: 200 }),
    () => {
      if (published.length === 0) return controls[0]!();
      return { ...assemble(rescheduleBase, { id: r.pick(published), body: json(rescheduleBase.body!()) }), control: 'read', expectStatus: 200 };
    },
    () => {
      // a cancelled job is gone: no later case may take it for a waiting one
      if (published.length < 3) return controls[0]!();
      const id = published.splice(r.int(published.length), 1)[0]!;
      return { ...assemble(cancelBase, { id, query: r.pick(['', 'running=true', 'running=false']) }), control: 'cancel', expectStatus: 204 };
    },
    () => {
      cases.push({ ...assemble(pauseBase, {}), control: 'pause', expectStatus: 200 });
      return { ...assemble(resumeBase, {}), control: 'resume', expectStatus: 200 };
    },
  ];

  // jobs for the cancel and reschedule cases to aim at from the start
  for (let i = 0; i < 3; i++) cases.push(controls[0]!());
  // every documented body field of every operation gets a bad value at least once, whatever the draws below
  for (const b of bases) {
    for (const [field, values] of Object.entries(b.fields ?? {})) {
      cases.push({ ...assemble(b, { body: json({ ...b.body!(field), [field]: r.pick(values) }) }), defect: `bad ${field}` });
    }
  }
  while (cases.length < count) {
    if (r.chance(0.06)) {
      cases.push(r.pick(controls)());
      continue;
    }
    const made = r.pick(defects)(r.pick(bases));
    if (made) cases.push(made);
  }
  return cases;
}

/** Deletes a registration the run made (the id is only known from its answer). */
export function deleteWaiterCase(registrationId: string, correlationId: string, key: string): FuzzCase {
  return {
    operation: 'DELETE /waiters/{registrationId}',
    method: 'DELETE',
    path: `waiters/${registrationId}?correlationId=${enc(correlationId)}`,
    headers: { 'x-functions-key': key },
    control: 'delete-waiter',
    expectStatus: 204,
  };
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

/** encodeURIComponent refuses lone surrogates. */
function isWellFormed(s: string): boolean {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}

function appendQuery(query: string, part: string): string {
  return query === '' ? part : `${query}&${part}`;
}

/** A prefix of valid JSON that is not itself JSON. */
function truncate(text: string, r: Rand): string {
  for (;;) {
    const cut = text.slice(0, 1 + r.int(text.length - 1));
    try {
      JSON.parse(cut);
    } catch {
      return cut;
    }
  }
}
