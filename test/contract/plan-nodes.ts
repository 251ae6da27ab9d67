// The nodes of a PostgreSQL EXPLAIN (FORMAT JSON) plan, for the plan contract tests (claim, flow list, dead-letter
// index, job history).

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  /** With EXPLAIN (ANALYZE, BUFFERS): the node's buffers, its children's included. */
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  /** With EXPLAIN ANALYZE: rows a node returned per loop (PGlite averages them), its loops, and rows its filter dropped. */
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'TID Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/** What runs an EXPLAIN in a transaction: the plan tests' PostgreSQL or PGlite client. */
interface Transactional {
  transaction<T>(fn: (tx: { query<R>(text: string, params?: unknown[]): Promise<{ rows: R[] }> }) => Promise<T>): Promise<T>;
}

type Tx = { query(text: string): Promise<unknown> };

/**
 * EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of `text` in a transaction that is rolled back, so a writing statement runs
 * and leaves the data as it was. `setup` runs first in the same transaction (SET LOCAL, PREPARE: `text` may be an
 * EXECUTE of what it prepared), `teardown` after the EXPLAIN (a DEALLOCATE: PREPARE is not transactional).
 */
export async function explainRolledBack(
  client: Transactional,
  text: string,
  params: unknown[] = [],
  o: { setup?: (tx: Tx) => Promise<void>; teardown?: (tx: Tx) => Promise<void> } = {},
): Promise<PlanNode> {
  let plan: PlanNode | undefined;
  const rollback = new Error('rollback');
  await client
    .transaction(async (tx) => {
      await o.setup?.(tx);
      const r = await tx.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params);
      plan = r.rows[0]!['QUERY PLAN'][0]!.Plan;
      await o.teardown?.(tx);
      throw rollback;
    })
    .catch((err: unknown) => {
      if (err !== rollback) throw err;
    });
  return plan!;
}

/** The node and every node under it, depth first. */
export const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/** `Index Scan asyncresponse_… on asyncresponse_…_idx`: what a failed plan assertion prints. */
export const describeNode = (n: PlanNode) => `${n['Node Type']}${n['Relation Name'] ? ` ${n['Relation Name']}` : ''}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`;
