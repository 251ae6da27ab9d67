// The binary collation of queue names and the exact queue match every statement module uses (statements.ts
// re-exports them).

export const BIN2 = 'Latin1_General_100_BIN2';

/**
 * Exact queue match (spec §1.3). `=` pads the shorter operand with spaces under every collation, so the
 * appended '.' makes trailing spaces count and BIN2 stops a case-insensitive column folding case. The plain
 * comparison stays first so the ready index is still seeked. PostgreSQL: plain `queue = $1`.
 */
export function exactQueueMatch(column: string, param: string): string {
  return `${column} = @${param} AND ${exactTextMatch(column, param)}`;
}

/** The sentinel half alone (exactQueueMatch adds the seekable plain comparison before it). */
export function exactTextMatch(expression: string, param: string): string {
  return `${expression} + N'.' = @${param} + N'.' COLLATE ${BIN2}`;
}

