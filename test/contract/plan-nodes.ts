// The nodes of a PostgreSQL EXPLAIN (FORMAT JSON) plan, for the plan contract tests (claim, flow list, dead-letter
// index, job history).

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  /** With EXPLAIN (ANALYZE, BUFFERS): the node's buffers, its children's included. */
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'TID Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/** The node and every node under it, depth first. */
export const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/** `Index Scan asyncresponse_… on asyncresponse_…_idx`: what a failed plan assertion prints. */
export const describeNode = (n: PlanNode) => `${n['Node Type']}${n['Relation Name'] ? ` ${n['Relation Name']}` : ''}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`;
