// Statements at the wire: every query a pg connection sends (pool queries and the statements of a transaction,
// BEGIN and COMMIT included), every query PGlite runs (its transactions' included) and every request a tedious
// connection (the mssql driver's) sends: SQL batches and parameterized statements, procedure calls, and the
// transaction manager's begin, commit and rollback. Counted by the SQL's first line; a T-SQL batch by its first line
// that is not a SET, DECLARE or BEGIN TRAN (its first lines are session settings, the same for every batch). Used by
// the flows bench and the flows statement-count test; `ignore` drops the caller's own reads.
import { createRequire } from 'node:module';

export interface WireCounter {
  /** Statements counted since the last reset, by their SQL's first line (whitespace collapsed). */
  readonly byStatement: Map<string, number>;
  total(): number;
  reset(): void;
  /** Restores the drivers' methods. */
  stop(): void;
}

type QueryFn = (this: unknown, ...args: unknown[]) => unknown;

const label = (text: unknown): string => {
  const sql = typeof text === 'string' ? text : typeof (text as { text?: unknown })?.text === 'string' ? (text as { text: string }).text : String(text);
  return sql.trim().split('\n')[0]!.replace(/\s+/g, ' ').slice(0, 110);
};

/** A T-SQL batch's first line that says what it does (session settings and declarations skipped). */
const tsqlLabel = (sql: string): string => {
  const lines = sql.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('--'));
  const telling = lines.find((l) => !/^(SET |DECLARE |BEGIN TRAN|BEGIN TRY|BEGIN$)/i.test(l)) ?? lines[0] ?? '';
  return `[tds] ${telling.replace(/\s+/g, ' ').slice(0, 104)}`;
};

export function countWire(ignore: (sql: string) => boolean = () => false): WireCounter {
  const byStatement = new Map<string, number>();
  const count = (text: unknown) => {
    const full = typeof text === 'string' ? text : ((text as { text?: string })?.text ?? '');
    if (ignore(full)) return;
    const k = label(text);
    byStatement.set(k, (byStatement.get(k) ?? 0) + 1);
  };
  const restore: Array<() => void> = [];
  const patch = (proto: Record<string, unknown>, name: string, wrap: (orig: QueryFn) => QueryFn) => {
    const orig = proto[name] as QueryFn;
    proto[name] = wrap(orig);
    restore.push(() => (proto[name] = orig));
  };
  const req = createRequire(__filename);
  try {
    const pg = req('pg') as { Client: { prototype: Record<string, unknown> } };
    patch(pg.Client.prototype, 'query', (orig) =>
      function (this: unknown, ...args: unknown[]) {
        count(args[0]);
        return orig.apply(this, args);
      },
    );
  } catch {
    /* pg absent */
  }
  try {
    const { PGlite } = req('@electric-sql/pglite') as { PGlite: { prototype: object } };
    const base = Object.getPrototypeOf(PGlite.prototype) as Record<string, unknown>;
    patch(base, 'query', (orig) =>
      function (this: unknown, ...args: unknown[]) {
        count(args[0]);
        return orig.apply(this, args);
      },
    );
    patch(base, 'transaction', (orig) =>
      function (this: unknown, ...args: unknown[]) {
        const fn = args[0] as (tx: { query: QueryFn }) => unknown;
        count('BEGIN');
        const wrapped = (tx: { query: QueryFn }) => {
          const q = tx.query;
          tx.query = function (this: unknown, ...a: unknown[]) {
            count(a[0]);
            return q.apply(this, a);
          };
          return fn(tx);
        };
        const out = orig.apply(this, [wrapped, ...args.slice(1)]) as Promise<unknown>;
        return out.finally(() => count('COMMIT'));
      },
    );
  } catch {
    /* pglite absent */
  }
  try {
    const tedious = req(req.resolve('tedious', { paths: [req.resolve('mssql')] })) as { Connection: { prototype: Record<string, unknown> } };
    const sqlOf = (request: unknown) => String((request as { sqlTextOrProcedure?: unknown })?.sqlTextOrProcedure ?? '');
    for (const name of ['execSql', 'execSqlBatch', 'callProcedure', 'execute']) {
      patch(tedious.Connection.prototype, name, (orig) =>
        function (this: unknown, ...args: unknown[]) {
          const sql = sqlOf(args[0]);
          if (!ignore(sql)) {
            const k = name === 'callProcedure' ? `[tds] EXEC ${sql}` : tsqlLabel(sql);
            byStatement.set(k, (byStatement.get(k) ?? 0) + 1);
          }
          return orig.apply(this, args);
        },
      );
    }
    for (const [name, k] of [['beginTransaction', '[tds] begin transaction'], ['commitTransaction', '[tds] commit transaction'], ['rollbackTransaction', '[tds] rollback transaction']] as const) {
      patch(tedious.Connection.prototype, name, (orig) =>
        function (this: unknown, ...args: unknown[]) {
          byStatement.set(k, (byStatement.get(k) ?? 0) + 1);
          return orig.apply(this, args);
        },
      );
    }
  } catch {
    /* mssql absent */
  }
  return {
    byStatement,
    total: () => [...byStatement.values()].reduce((a, b) => a + b, 0),
    reset: () => byStatement.clear(),
    stop: () => {
      for (const r of restore.reverse()) r();
    },
  };
}
