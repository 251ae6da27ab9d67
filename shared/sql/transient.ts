// Transient-fault classification for both drivers (spec §4.1–4.2). "Transient" means: the same statement may
// succeed if retried on a fresh connection after a backoff. Cancellation is never transient.
//
// classifyTransient() also says WHICH kind of transient fault it is, because the right wait differs by orders of
// magnitude (see DEFAULT_RETRY_CLASSES in retry.ts):
//   lock        a deadlock victim (1205) or a lock wait that timed out (1222): the other transaction is usually
//               gone within milliseconds, so retry almost at once.
//   throttling  Azure SQL resource governance (40501 "service is busy", 10928/10929 resource limits,
//               49918–49920 "too many operations", 1204 out of lock resources): back off for seconds.
//   failover    the database is moving or reconfiguring (40613, 40197, 40540, 40143, 4060, 4221): back off for
//               seconds; reconfigurations usually finish within 60 s.
//   connection  the connection, not the statement, failed (resets, socket errors, timeouts, pool acquire timeouts,
//               severity >= 20, the client-side network numbers): retry on a fresh connection after a short wait.

/** The spec's curated SQL Server / Azure SQL error numbers (§4.1), exactly 24. */
export const SQLSERVER_TRANSIENT_NUMBERS: readonly number[] = Object.freeze([
  -2, 20, 64, 121, 233, 997, 1204, 1205, 1222, 4060, 4221, 10053, 10054, 10060, 10928, 10929, 40143, 40197, 40501,
  40540, 40613, 49918, 49919, 49920,
]);

const SQLSERVER_NUMBERS = new Set(SQLSERVER_TRANSIENT_NUMBERS);

export type TransientClass = 'lock' | 'throttling' | 'failover' | 'connection';

/** The class of every curated number (the remaining ones are connection-level: -2, 20, 64, 121, 233, 997, 1005x, 10060). */
const SQLSERVER_NUMBER_CLASS: ReadonlyMap<number, TransientClass> = new Map<number, TransientClass>([
  [1205, 'lock'],
  [1222, 'lock'],
  [1204, 'throttling'],
  [10928, 'throttling'],
  [10929, 'throttling'],
  [40501, 'throttling'],
  [49918, 'throttling'],
  [49919, 'throttling'],
  [49920, 'throttling'],
  [4060, 'failover'],
  [4221, 'failover'],
  [40143, 'failover'],
  [40197, 'failover'],
  [40540, 'failover'],
  [40613, 'failover'],
]);

/** When one error carries several transient records, the one asking for the longest wait decides. */
const CLASS_PRIORITY: readonly TransientClass[] = ['throttling', 'failover', 'lock', 'connection'];

function strongest(classes: ReadonlySet<TransientClass>): TransientClass | null {
  for (const c of CLASS_PRIORITY) if (classes.has(c)) return c;
  return null;
}

/**
 * Connection-level codes from mssql/tedious/net: the socket or the pool failed, not the statement. A socket error
 * while a request is in flight reaches the request as the raw net error (tedious SENT_CLIENT_REQUEST →
 * request.callback(err)), which mssql's RequestError keeps as its code: EPIPE, ETIMEDOUT, EHOSTUNREACH, … ECLOSE
 * is tedious's "Connection closed before request completed."
 */
const SQLSERVER_CONNECTION_CODES = new Set([
  'ESOCKET',
  'ETIMEOUT',
  'ECONNRESET',
  'ECONNCLOSED',
  'ECONNREFUSED',
  'ECLOSE',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** Network failures of a token request (node net codes, MSAL's network_error, @azure/core-rest-pipeline's send error). */
const TOKEN_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'ECONNABORTED',
  'REQUEST_SEND_ERROR',
  'network_error',
]);

/** tarn's acquire timeout (mssql prefixes it with "Failed to acquire a connection from the pool: "). */
const POOL_TIMEOUT_MESSAGES = [
  /failed to acquire a connection from the pool/i,
  /operation timed out for an unknown reason/i,
  /timeout acquiring a connection/i,
];

/**
 * Azure login failures that tedious stops retrying lose their error number (ELOGIN keeps only the text), so
 * the server's own retry advice is recognised by its wording.
 */
const TRANSIENT_LOGIN_MESSAGES: ReadonlyArray<readonly [RegExp, TransientClass]> = [
  [/service is (currently )?busy/i, 'throttling'],
  [/is not currently available/i, 'failover'],
  [/retry the connection later/i, 'failover'],
];

type Bag = Record<string, unknown>;

function asBag(value: unknown): Bag | undefined {
  return value !== null && typeof value === 'object' ? (value as Bag) : undefined;
}

/**
 * tedious reads an ERROR token's number as an unsigned 32-bit integer, so a negative number (e.g. -2) arrives as
 * 2^32 - 2; it is read back as the signed int32 the server sent.
 */
function numberOf(value: unknown): number | undefined {
  let n: number | undefined;
  if (typeof value === 'number' && Number.isFinite(value)) n = value;
  else if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) n = Number(value);
  if (n !== undefined && Number.isInteger(n) && n >= 2 ** 31 && n < 2 ** 32) n -= 2 ** 32;
  return n;
}

/** The error itself, its driver error, and the driver error's server info — where mssql spreads number/class. */
function layers(err: Bag): Bag[] {
  const out: Bag[] = [err];
  const original = asBag(err.originalError);
  if (original) {
    out.push(original);
    const info = asBag(original.info);
    if (info) out.push(info);
  }
  const info = asBag(err.info);
  if (info) out.push(info);
  return out;
}

/** Every SQL error record carried by `err`: the thrown one and every entry of `precedingErrors`. */
function sqlRecords(err: Bag): Bag[] {
  const records = layers(err);
  const preceding = err.precedingErrors;
  if (Array.isArray(preceding)) {
    for (const p of preceding) {
      const bag = asBag(p);
      if (bag) records.push(...layers(bag));
    }
  }
  return records;
}

/** All SQL Server error numbers seen on `err` (thrown + preceding), without duplicates, in encounter order. */
export function sqlServerErrorNumbers(err: unknown): number[] {
  const bag = asBag(err);
  if (!bag) return [];
  const seen: number[] = [];
  for (const record of sqlRecords(bag)) {
    const n = numberOf(record.number);
    if (n !== undefined && !seen.includes(n)) seen.push(n);
  }
  return seen;
}

/** The highest severity (class) seen on `err`, or undefined when none is reported. */
export function sqlServerErrorClass(err: unknown): number | undefined {
  const bag = asBag(err);
  if (!bag) return undefined;
  let max: number | undefined;
  for (const record of sqlRecords(bag)) {
    const c = numberOf(record.class) ?? numberOf(record.severity);
    if (c !== undefined && (max === undefined || c > max)) max = c;
  }
  return max;
}

function isCancellation(err: Bag): boolean {
  for (const layer of layers(err)) {
    if (layer.code === 'ECANCEL' || layer.code === 'EABORT' || layer.code === 'ABORT_ERR') return true;
    if (layer.name === 'AbortError') return true;
  }
  return false;
}

function messageOf(layer: Bag): string {
  return typeof layer.message === 'string' ? layer.message : '';
}

/** The layers of `err` an error code can sit on: `layers`, plus the `cause` tedious keeps of a wrapped net error. */
function codeLayers(err: Bag): Bag[] {
  const out: Bag[] = [];
  for (const layer of layers(err)) {
    out.push(layer);
    const cause = asBag(layer.cause);
    if (cause) out.push(cause);
  }
  return out;
}

/**
 * A failed Entra token fetch: tedious throws AggregateError([ConnectionError('Security token could not be
 * authenticated or authorized.', 'EFEDAUTH'), <the credential's error>]) and mssql wraps it in a ConnectionError
 * without a code. The credential's error decides: a network failure or a 5xx/408 of the token endpoint (a managed
 * identity endpoint hiccup) is a connection fault, a 429 is throttling; anything else (no identity here, an
 * unknown client id, a null token) is a configuration error retrying cannot fix.
 */
function tokenFetchClass(err: Bag): TransientClass | null {
  for (const layer of layers(err)) {
    const errors = Array.isArray(layer.errors) ? layer.errors.map(asBag).filter((e): e is Bag => e !== undefined) : [];
    if (!errors.some((e) => e.code === 'EFEDAUTH')) continue;
    const found = new Set<TransientClass>();
    for (const credentialError of errors.filter((e) => e.code !== 'EFEDAUTH')) {
      const cls = credentialFailureClass(credentialError, 0);
      if (cls) found.add(cls);
    }
    return strongest(found);
  }
  return null;
}

/** Walks a credential error, its `cause` chain and an AggregateAuthenticationError's `errors`. */
function credentialFailureClass(error: Bag, depth: number): TransientClass | null {
  if (depth > 4) return null;
  if (error.name === 'AbortError') return null;
  const found = new Set<TransientClass>();
  const status = numberOf(error.statusCode) ?? numberOf(error.status);
  if (status === 429) found.add('throttling');
  else if (status !== undefined && (status === 408 || (status >= 500 && status < 600))) found.add('connection');
  for (const code of [error.code, error.errorCode]) {
    if (typeof code === 'string' && TOKEN_NETWORK_CODES.has(code)) found.add('connection');
  }
  // @azure/identity's ManagedIdentityCredential reports a network failure as CredentialUnavailableError with this text
  if (/network unreachable/i.test(messageOf(error))) found.add('connection');
  const nested = [asBag(error.cause), ...(Array.isArray(error.errors) ? error.errors.map(asBag) : [])];
  for (const inner of nested) {
    const cls = inner ? credentialFailureClass(inner, depth + 1) : null;
    if (cls) found.add(cls);
  }
  return strongest(found);
}

/** The transient class of a SQL Server / mssql error, or null when it is permanent (or a cancellation). */
export function classifySqlServerTransient(err: unknown): TransientClass | null {
  const bag = asBag(err);
  if (!bag || isCancellation(bag)) return null;
  const tokenClass = tokenFetchClass(bag);
  if (tokenClass) return tokenClass;
  const found = new Set<TransientClass>();
  for (const record of sqlRecords(bag)) {
    const n = numberOf(record.number);
    if (n !== undefined && SQLSERVER_NUMBERS.has(n)) found.add(SQLSERVER_NUMBER_CLASS.get(n) ?? 'connection');
  }
  const byNumber = strongest(found);
  if (byNumber) return byNumber;
  for (const record of sqlRecords(bag)) {
    const severity = numberOf(record.class) ?? numberOf(record.severity);
    if (severity !== undefined && severity >= 20) return 'connection';
  }
  for (const layer of layers(bag)) {
    const message = messageOf(layer);
    if (layer.code === 'ELOGIN') {
      for (const [re, cls] of TRANSIENT_LOGIN_MESSAGES) if (re.test(message)) found.add(cls);
    }
    // tedious marks login errors it considers retryable (4060, 10928, 10929, 40197, 40501, 40613) while it still
    // has retries left; the number itself is not kept, so the class is the likeliest one.
    if (layer.isTransient === true) found.add('failover');
    if (isTarnTimeout(layer) || POOL_TIMEOUT_MESSAGES.some((re) => re.test(message))) found.add('connection');
  }
  for (const layer of codeLayers(bag)) {
    if (typeof layer.code === 'string' && SQLSERVER_CONNECTION_CODES.has(layer.code)) found.add('connection');
  }
  return strongest(found);
}

export function isTransientSqlServerError(err: unknown): boolean {
  return classifySqlServerTransient(err) !== null;
}

/** tarn's TimeoutError does not set `name`, so its class name is the reliable mark. */
function isTarnTimeout(layer: Bag): boolean {
  const ctor = (layer as { constructor?: { name?: unknown } }).constructor;
  return layer.name === 'TimeoutError' || (ctor !== undefined && ctor.name === 'TimeoutError');
}

// PostgreSQL: SQLSTATE classes and node/pg connection failures.
const PG_TRANSIENT_SQLSTATES: ReadonlyMap<string, TransientClass> = new Map<string, TransientClass>([
  ['40001', 'lock'], // serialization_failure
  ['40P01', 'lock'], // deadlock_detected
  ['55P03', 'lock'], // lock_not_available: a lock timeout, like SQL Server's 1222
  ['57P01', 'failover'], // admin_shutdown
  ['57P02', 'failover'], // crash_shutdown
  ['57P03', 'failover'], // cannot_connect_now
  ['53300', 'throttling'], // too_many_connections
]);

const NODE_CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE']);

const PG_TRANSIENT_MESSAGES = [
  /^connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /^query read timeout$/i,
];

/** The transient class of a PostgreSQL (pg / PGlite / node net) error, or null when it is permanent. */
export function classifyPostgresTransient(err: unknown): TransientClass | null {
  let layer = asBag(err);
  // pg-pool wraps connect timeouts with `cause`; follow a short chain.
  for (let depth = 0; layer && depth < 4; depth++) {
    if (layer.name === 'AbortError' || layer.code === 'ABORT_ERR') return null;
    const code = layer.code;
    if (typeof code === 'string') {
      const cls = PG_TRANSIENT_SQLSTATES.get(code);
      if (cls) return cls;
      if (/^08[0-9A-Z]{3}$/.test(code)) return 'connection'; // connection_exception class
      if (NODE_CONNECTION_CODES.has(code)) return 'connection';
    }
    const message = messageOf(layer);
    if (PG_TRANSIENT_MESSAGES.some((re) => re.test(message))) return 'connection';
    layer = asBag(layer.cause);
  }
  return null;
}

export function isTransientPostgresError(err: unknown): boolean {
  return classifyPostgresTransient(err) !== null;
}

/**
 * Which kind of transient fault `err` is (either driver), or null when retrying cannot help: permanent errors,
 * cancellations and aborts. Every store call's failure goes through this one function.
 */
export function classifyTransient(err: unknown): TransientClass | null {
  return classifySqlServerTransient(err) ?? classifyPostgresTransient(err);
}

export function isTransientError(err: unknown): boolean {
  return classifyTransient(err) !== null;
}
