// The database clock plus a number of milliseconds, the one arithmetic every T-SQL module shares (statements.ts
// re-exports it). A module of its own so that ready-set.ts and statements.ts both import it and not each other.

/**
 * base + ms on the database clock (spec §1.12). DATEADD takes an int, so a bigint of milliseconds is split into
 * seconds and a millisecond remainder: exact for negatives and up to 3650 days.
 * PostgreSQL: clock_timestamp() + $1 * interval '1 millisecond'.
 */
export function dbClockPlus(msExpression: string, base = 'SYSUTCDATETIME()'): string {
  return (
    `DATEADD(SECOND, CAST(${msExpression} / 1000 AS int), ` +
    `DATEADD(MILLISECOND, CAST(${msExpression} % 1000 AS int), ${base}))`
  );
}
