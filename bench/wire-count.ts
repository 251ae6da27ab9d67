// Statements at the wire: every query a pg connection sends (pool queries and the statements of a transaction,
// BEGIN and COMMIT included) and every query PGlite runs (its transactions' included), counted by the SQL's
// first line. Used by the flows bench and the flows statement-count test; `ignore` drops the caller's own reads.
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
  return {
    byStatement,
    total: () => [...byStatement.values()].reduce((a, b) => a + b, 0),
    reset: () => byStatement.clear(),
    stop: () => {
      for (const r of restore.reverse()) r();
    },
  };
}
