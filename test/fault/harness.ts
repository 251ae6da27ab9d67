// Wiring for the fault tests: a FaultServer that answers the SQL Server transport store's statements (recognised
// by a fragment of their text), and the real store + publisher over the real mssql/tedious client.

import { randomUUID } from 'node:crypto';
import { afterEach } from 'vitest';
import type { Logger } from '../../shared/log';
import { transportNames } from '../../shared/sql/identifiers';
import { retryPolicy, type RetryPolicy } from '../../shared/sql/retry';
import type { TransientClass } from '../../shared/sql/transient';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { createSqlServerPool, type SqlServerConnectionOptions } from '../../shared/stores/sqlserver/connection';
import { createPoolHolder } from '../../shared/stores/sqlserver/pool-guard';
import { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { Publisher } from '../../shared/transport/publisher';
import type { OutgoingMessage } from '../../shared/transport/types';
import { WakeSignal } from '../../shared/transport/wake';
import { FaultServer, ok, type FaultServerOptions, type LoginReply, type Reply, type ResultSet, type Row, type SqlRequest } from '../tds/fault-server';
import { catalogRecordsets, specCatalog } from '../unit/sqlserver.fakes';

export const NAMES = transportNames('dbo', DEFAULT_TRANSPORT_TABLE, 'sqlserver');

export type Statement = 'catalog' | 'publish' | 'claim' | 'ack' | 'release' | 'release-unstarted' | 'renew' | 'dead-letter' | 'now' | 'other';

/** Which store statement a request carries (each statement has a distinctive fragment). */
export function statementOf(request: SqlRequest): Statement {
  const t = request.text;
  if (t.includes('FROM sys.objects')) return 'catalog';
  if (t.includes('OPENJSON(@batch)')) return 'publish';
  if (t.includes('WITH next AS')) return 'claim';
  if (t.includes('OPENJSON(@settlements)')) return t.startsWith('UPDATE') ? 'release-unstarted' : 'ack';
  if (t.includes('BEGIN TRAN') && t.includes('dead_letter_reason')) return 'dead-letter';
  if (t.includes('SET locked_until =')) return 'renew';
  if (t.includes('SET available_at =')) return 'release';
  if (t.includes('AS now')) return 'now';
  return 'other';
}

/** The message ids in a request's parameter values (the JSON batch / settlements). */
export function idsIn(request: SqlRequest): string[] {
  const ids = new Set<string>();
  for (const m of request.text.matchAll(/"id":"([0-9a-fA-F-]{36})"/g)) ids.add(m[1]!.toLowerCase());
  return [...ids];
}

/** The catalog of a table exactly like the spec's DDL, as the four result sets of the catalog query. */
export function catalogSets(): ResultSet[] {
  return catalogRecordsets(specCatalog(NAMES)).map((rows) => ({ rows: rows as Row[] }));
}

const idAndTime = [
  { name: 'id', type: 'nvarchar' as const },
  { name: 'available_at', type: 'datetime2' as const },
];

/** The publish batch's answer: every id inserted (result set 1), or all of them already stored (sets 1 + 2). */
export function publishAnswer(ids: readonly string[], duplicate = false): ResultSet[] {
  const rows = ids.map((id) => ({ id, available_at: new Date() }));
  return duplicate ? [{ columns: idAndTime, rows: [] }, { columns: idAndTime, rows }] : [{ columns: idAndTime, rows }];
}

export interface ClaimedRow {
  id: string;
  lockId: string;
  payloadJson?: string;
  attempts?: number;
}

export function claimAnswer(rows: readonly ClaimedRow[]): ResultSet[] {
  const now = new Date();
  return [
    {
      columns: [
        { name: 'id', type: 'nvarchar' },
        { name: 'queue', type: 'nvarchar' },
        { name: 'payload_json', type: 'nvarchar' },
        { name: 'headers_json', type: 'nvarchar' },
        { name: 'attempts', type: 'int' },
        { name: 'lock_id', type: 'nvarchar' },
        { name: 'created_at', type: 'datetime2' },
        { name: 'available_at', type: 'datetime2' },
      ],
      rows: rows.map((r) => ({
        id: r.id,
        queue: 'worker',
        payload_json: r.payloadJson ?? '{"n":1}',
        headers_json: '{}',
        attempts: r.attempts ?? 1,
        lock_id: r.lockId,
        created_at: now,
        available_at: now,
      })),
    },
  ];
}

export const affected = (n: number): ResultSet[] => [{ columns: [{ name: 'affected', type: 'int' }], rows: [{ affected: n }] }];

/** Tiny waits so the fault tests stay fast; the classes keep their order (lock < connection < failover/throttling). */
export const FAST_CLASSES: RetryPolicy = retryPolicy({
  lock: { baseMs: 1, maxMs: 2 },
  connection: { baseMs: 2, maxMs: 8 },
  failover: { baseMs: 4, maxMs: 16 },
  throttling: { baseMs: 4, maxMs: 16 },
});

export interface CapturedLog {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  details: unknown[];
}

export function capturingLogger(): Logger & { logs: CapturedLog[] } {
  const logs: CapturedLog[] = [];
  const at =
    (level: CapturedLog['level']) =>
    (message: string, ...details: unknown[]) =>
      void logs.push({ level, message, details });
  return { logs, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** The classes the publisher named in its "retrying" warnings, in order. */
export function retriedClasses(logs: readonly CapturedLog[]): TransientClass[] {
  return logs.flatMap((l) => {
    const m = /failed transiently \((\w+)\)/.exec(l.message);
    return m ? [m[1] as TransientClass] : [];
  });
}

export function connectionTo(port: number, extra: Partial<SqlServerConnectionOptions> = {}): SqlServerConnectionOptions {
  return {
    server: '127.0.0.1',
    port,
    database: 'faultdb',
    user: 'app',
    password: 'not-a-secret',
    encrypt: false,
    trustServerCertificate: true,
    poolMax: 4,
    poolMin: 0,
    connectTimeoutMs: 2_000,
    requestTimeoutMs: 2_000,
    cancelTimeoutMs: 200,
    ...extra,
  };
}

export function openStore(
  connection: SqlServerConnectionOptions,
  logger: Logger,
  credentialFor?: Parameters<typeof createSqlServerPool>[2],
): SqlServerTransportStore {
  const holder = createPoolHolder(() => createSqlServerPool(connection, logger, credentialFor), logger);
  return new SqlServerTransportStore(holder, { schema: NAMES.schema, table: NAMES.table, autoCreateSchema: false, logger });
}

export function publisherFor(store: SqlServerTransportStore, logger: Logger, maxAttempts = 3, classes: RetryPolicy = FAST_CLASSES): Publisher {
  return new Publisher(store, new WakeSignal(), { maxAttempts, classes, random: () => 0.5 }, logger);
}

export function message(id: string = randomUUID()): OutgoingMessage {
  return { id, queue: 'worker', payloadJson: '{"n":1}', headers: {}, delayMs: 0 };
}

/** Answers the catalog with the spec's table and every publish as inserted; anything else with an empty success. */
export function publishingAnswer(request: SqlRequest): Reply {
  switch (statementOf(request)) {
    case 'catalog':
      return ok(...catalogSets());
    case 'publish':
      return ok(...publishAnswer(idsIn(request)));
    default:
      return ok();
  }
}

/** A refused login (18456, as Azure SQL answers after a failover or with an expired token). */
export const loginFailed = (text = "Login failed for user 'app'."): LoginReply => ({
  kind: 'error',
  error: { number: 18456, class: 14, state: 1, message: text },
});

/**
 * Logins that are accepted until `refuse(n)` is called: then the next n are refused with 18456 (or, with
 * `every`, every login from then on).
 */
export function refusableLogins(options: { every?: boolean } = {}) {
  let refusing = 0;
  return {
    refuse(n: number) {
      refusing = n;
    },
    onLogin: (): LoginReply => (refusing > 0 && (options.every || refusing-- > 0) ? loginFailed() : { kind: 'ok' }),
  };
}

/** A failover: every pooled connection is reset; then let the client's event loop see the resets. */
export async function failover(server: FaultServer): Promise<void> {
  server.killAll();
  await new Promise((resolve) => setTimeout(resolve, 50));
}

/**
 * Per-test fault servers and the stores on them, closed after each test (stores first). Call once at the top of
 * a test file; `start` serves the scripted options and opens the real store (real mssql/tedious) on them.
 */
export function faultScope() {
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (let close = open.pop(); close; close = open.pop()) await close();
  });
  return {
    async start(
      options: FaultServerOptions,
      connection: Partial<SqlServerConnectionOptions> = {},
      credentialFor?: Parameters<typeof createSqlServerPool>[2],
    ): Promise<{ server: FaultServer; logger: ReturnType<typeof capturingLogger>; store: SqlServerTransportStore }> {
      const server = new FaultServer(options);
      open.push(() => server.close());
      const logger = capturingLogger();
      const store = openStore(connectionTo(await server.start(), connection), logger, credentialFor);
      open.push(() => store.close());
      return { server, logger, store };
    },
    /** Closes `close` after the test, before anything opened earlier. */
    closeAfter(close: () => Promise<void>): void {
      open.push(close);
    },
  };
}
