// Transient-fault classification for both drivers (spec §4.1–4.2). "Transient" means: the same statement may
// succeed if retried on a fresh connection after a short backoff. Cancellation is never transient.

/** The spec's curated SQL Server / Azure SQL error numbers (§4.1), exactly 24. */
export const SQLSERVER_TRANSIENT_NUMBERS: readonly number[] = Object.freeze([
  -2, 20, 64, 121, 233, 997, 1204, 1205, 1222, 4060, 4221, 10053, 10054, 10060, 10928, 10929, 40143, 40197, 40501,
  40540, 40613, 49918, 49919, 49920,
]);

const SQLSERVER_NUMBERS = new Set(SQLSERVER_TRANSIENT_NUMBERS);

/** Connection-level codes from mssql/tedious/net: the socket or the pool failed, not the statement. */
const SQLSERVER_CONNECTION_CODES = new Set(['ESOCKET', 'ETIMEOUT', 'ECONNRESET', 'ECONNCLOSED', 'ECONNREFUSED']);

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
const TRANSIENT_LOGIN_MESSAGES = [/is not currently available/i, /retry the connection later/i, /service is (currently )?busy/i];

type Bag = Record<string, unknown>;

function asBag(value: unknown): Bag | undefined {
  return value !== null && typeof value === 'object' ? (value as Bag) : undefined;
}

function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return Number(value);
  return undefined;
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

export function isTransientSqlServerError(err: unknown): boolean {
  const bag = asBag(err);
  if (!bag || isCancellation(bag)) return false;
  for (const record of sqlRecords(bag)) {
    const n = numberOf(record.number);
    if (n !== undefined && SQLSERVER_NUMBERS.has(n)) return true;
    const severity = numberOf(record.class) ?? numberOf(record.severity);
    if (severity !== undefined && severity >= 20) return true;
  }
  for (const layer of layers(bag)) {
    if (typeof layer.code === 'string' && SQLSERVER_CONNECTION_CODES.has(layer.code)) return true;
    // tedious marks login errors it considers retryable (4060, 40613, …) while it still has retries left.
    if (layer.isTransient === true) return true;
    const message = messageOf(layer);
    if (isTarnTimeout(layer) || POOL_TIMEOUT_MESSAGES.some((re) => re.test(message))) return true;
    if (layer.code === 'ELOGIN' && TRANSIENT_LOGIN_MESSAGES.some((re) => re.test(message))) return true;
  }
  return false;
}

/** tarn's TimeoutError does not set `name`, so its class name is the reliable mark. */
function isTarnTimeout(layer: Bag): boolean {
  const ctor = (layer as { constructor?: { name?: unknown } }).constructor;
  return layer.name === 'TimeoutError' || (ctor !== undefined && ctor.name === 'TimeoutError');
}

// PostgreSQL: SQLSTATE classes and node/pg connection failures.
const PG_TRANSIENT_SQLSTATES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available: a lock timeout, like SQL Server's 1222
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

const NODE_CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE']);

const PG_TRANSIENT_MESSAGES = [
  /^connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /^query read timeout$/i,
];

export function isTransientPostgresError(err: unknown): boolean {
  let layer = asBag(err);
  // pg-pool wraps connect timeouts with `cause`; follow a short chain.
  for (let depth = 0; layer && depth < 4; depth++) {
    if (layer.name === 'AbortError' || layer.code === 'ABORT_ERR') return false;
    const code = layer.code;
    if (typeof code === 'string') {
      if (PG_TRANSIENT_SQLSTATES.has(code)) return true;
      if (/^08[0-9A-Z]{3}$/.test(code)) return true; // connection_exception class
      if (NODE_CONNECTION_CODES.has(code)) return true;
    }
    const message = messageOf(layer);
    if (PG_TRANSIENT_MESSAGES.some((re) => re.test(message))) return true;
    layer = asBag(layer.cause);
  }
  return false;
}

export function isTransientError(err: unknown): boolean {
  return isTransientSqlServerError(err) || isTransientPostgresError(err);
}
