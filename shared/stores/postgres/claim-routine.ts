// The claim as a routine (PostgreSQL schema version 25): the same statement as statements.ts `claim`, run by a
// PL/pgSQL function that keeps one generic plan per session.
//
// Why: a prepared statement is planned anew for each of its first five runs, then keeps a generic plan only when
// that plan's estimate is no dearer than the custom ones'. The claim's generic plan must guess its LIMIT ($2) at a
// tenth of the queue's rows, so PostgreSQL kept planning it at every run: about 0.8 ms of the server's CPU per claim
// (its CTEs read eight relations), 1.6–2.2 µs a job in the bench/peers drain (pg_stat_statements: 405 plans for 403
// claims). Its generic plan is the custom one's shape (each range an index scan under its LIMIT, the UPDATE by TID;
// the claim-flatness plan tests read it), so the routine forces it: `plan_cache_mode` set on the function holds while
// it runs. A session-wide setting would reach statements whose generic plan is poor.
//
// The limited claim's routine (limit-statements.ts) gets the same setting from version 25 on.
//
// A schema without the routine (version 24 or earlier, migrated by a release before this one) still claims: the store
// sends the statement itself and warns once (store.ts). Rows, locks and order are the same either way.

import type { TransportNames } from '../../sql/identifiers';
import { queueStateTableName } from '../queue-state-names';
import { pgJobControlStatements } from './job-control-statements';
import { pgClaimText, qualifiedClaimRoutine } from './statements';

/** A routine's setting that keeps one generic plan for each of its statements (see above). */
export const GENERIC_PLANS = 'SET plan_cache_mode = force_generic_plan';

/** The claim's parameters ($1–$4, statements.ts `claim`) as a routine's arguments: name and type. */
export const CLAIM_ARGS = [['p_queue', 'text'], ['p_n', 'integer'], ['p_lease_ms', 'bigint'], ['p_lock_id', 'uuid']] as const;

/** The types of a routine's arguments, in order (its signature; a PREPARE of the statement it runs). */
export const argTypes = (args: ReadonlyArray<readonly [string, string]>): string[] => args.map(([, type]) => type);

/** The claim routine's signature, as `to_regprocedure` and `DROP FUNCTION` take it. */
export const claimRoutineSignature = (names: TransportNames): string => `${qualifiedClaimRoutine(names)}(${argTypes(CLAIM_ARGS).join(', ')})`;

/** The columns a claim returns (statements.ts `claim`'s RETURNING), as a routine's result. */
export const CLAIM_RESULT_COLUMNS =
  'id uuid, queue text, payload_json text, headers_json text, attempts integer, lock_id uuid, created_ms double precision, ' +
  'available_ms double precision, priority smallint, ordering_key text, seq bigint';

/**
 * A claim routine's CREATE (this one and the limited claim's): PL/pgSQL, the statements' $n bound to the arguments in
 * order, the search path pinned, and one generic plan per statement per session.
 */
export function pgClaimRoutine(
  name: string,
  args: ReadonlyArray<readonly [string, string]>,
  returns: string,
  body: (bind: (sql: string) => string) => string,
): string {
  const bind = (text: string) => text.replace(/\$([1-9])(?![0-9])/g, (m, i: string) => args[Number(i) - 1]?.[0] ?? m);
  return `CREATE OR REPLACE FUNCTION ${name}(${args.map(([n, t]) => `${n} ${t}`).join(', ')})
RETURNS TABLE (${returns})
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
${GENERIC_PLANS}
AS $fn$
#variable_conflict use_column
BEGIN
${body(bind)}
END
$fn$`;
}

export function pgClaimRoutineDdl(names: TransportNames): string {
  const paused = pgJobControlStatements(names, queueStateTableName(names, 'postgres')).pausedTest;
  return pgClaimRoutine(qualifiedClaimRoutine(names), CLAIM_ARGS, CLAIM_RESULT_COLUMNS, (bind) => `  RETURN QUERY ${bind(pgClaimText(names, paused))};`);
}

/** Whether the schema has the claim routine (its signature), read at the store's schema check. */
export function pgClaimRoutineExists(names: TransportNames): { text: string; values: string[] } {
  return { text: 'SELECT to_regprocedure($1) IS NOT NULL AS present', values: [claimRoutineSignature(names)] };
}
