// The PostgreSQL statements of recurring schedules (shared/schedules): the table (version 7), the upsert, reads,
// the due seek and the compare-and-set advance. SQL Server twins: stores/sqlserver/schedule-statements.ts.

import { quoteIdentifier } from '../../sql/identifiers';
import type { SchemaNames } from '../schema-names';

const q = (n: string) => quoteIdentifier(n, 'postgres');

export const schedulesTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.schedulesTable)}`;

const COLUMNS = 'name, target_kind, target, cron, time_zone, payload_json, headers_json, paused, misfire, catch_up_max, last_slot, next_slot, created_at, updated_at';
/** The definition columns an upsert compares to tell a replace from a re-applied static schedule. */
const DEFINITION = ['target_kind', 'target', 'cron', 'time_zone', 'payload_json', 'headers_json', 'paused', 'misfire', 'catch_up_max'];

/** Version 7: the table and its due index. */
export function pgScheduleDdl(n: SchemaNames): Array<{ name: string; text: string }> {
  const t = schedulesTable(n);
  return [
    {
      name: 'create schedules table',
      // name and target compare byte-wise (COLLATE "C"), like queue names; SQL Server: BIN2. Times are the
      // database's (created/updated) or slots computed from its clock.
      text: `CREATE TABLE IF NOT EXISTS ${t} (
    name text COLLATE "C" NOT NULL PRIMARY KEY,
    target_kind text NOT NULL CHECK (target_kind IN ('queue', 'topic')),
    target text COLLATE "C" NOT NULL,
    cron text NOT NULL,
    time_zone text NOT NULL,
    payload_json text NOT NULL,
    headers_json text NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    misfire text NOT NULL CHECK (misfire IN ('skip', 'catchUp')),
    catch_up_max integer NOT NULL DEFAULT 0,
    last_slot timestamptz NULL,
    next_slot timestamptz NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    },
    {
      name: 'create schedules due index',
      // the evaluation's one seek: unpaused schedules by next slot
      text: `CREATE INDEX IF NOT EXISTS ${q(n.schedulesDueIndex)} ON ${t} (next_slot) WHERE NOT paused`,
    },
  ];
}

export interface PgScheduleStatements {
  upsert: string;
  get: string;
  list: string;
  delete: string;
  setPaused: string;
  due: string;
  soonest: string;
  advance: string;
  now: string;
}

export function pgScheduleStatements(n: SchemaNames): PgScheduleStatements {
  const t = schedulesTable(n);
  const distinct = `(${DEFINITION.map((c) => `s.${c}`).join(', ')}) IS DISTINCT FROM (${DEFINITION.map((c) => `excluded.${c}`).join(', ')})`;
  return {
    // Insert, or replace only when the definition differs; the next slot is kept while cron, zone and the
    // (unpaused) state are the same, so a replace or a static schedule applied again neither skips nor repeats a
    // slot. No row returned = unchanged (the caller reads it). xmax = 0: the row was inserted, not updated.
    upsert: `INSERT INTO ${t} AS s (name, target_kind, target, cron, time_zone, payload_json, headers_json, paused, misfire, catch_up_max, next_slot)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (name) DO UPDATE SET
  target_kind = excluded.target_kind, target = excluded.target, cron = excluded.cron, time_zone = excluded.time_zone,
  payload_json = excluded.payload_json, headers_json = excluded.headers_json, paused = excluded.paused,
  misfire = excluded.misfire, catch_up_max = excluded.catch_up_max,
  next_slot = CASE WHEN s.cron = excluded.cron AND s.time_zone = excluded.time_zone AND NOT s.paused AND NOT excluded.paused
                    AND s.next_slot IS NOT NULL THEN s.next_slot ELSE excluded.next_slot END,
  updated_at = clock_timestamp()
WHERE ${distinct}
RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    get: `SELECT ${COLUMNS} FROM ${t} WHERE name = $1`,
    list: `SELECT ${COLUMNS} FROM ${t} ORDER BY name LIMIT $1`,
    delete: `DELETE FROM ${t} WHERE name = $1`,
    // pause keeps the next slot (shown as where it would run); resume sets a fresh one from now
    setPaused: `UPDATE ${t} SET paused = $2, next_slot = CASE WHEN $2 THEN next_slot ELSE $3 END, updated_at = clock_timestamp()
WHERE name = $1
RETURNING ${COLUMNS}`,
    // one row at least: the clock, with the due schedules (if any) beside it
    due: `SELECT c.now, d.* FROM (SELECT clock_timestamp() AS now) AS c
LEFT JOIN LATERAL (SELECT ${COLUMNS} FROM ${t} WHERE NOT paused AND next_slot <= c.now ORDER BY next_slot LIMIT $1) AS d ON true`,
    soonest: `SELECT (SELECT min(next_slot) FROM ${t} WHERE NOT paused) AS next_slot, clock_timestamp() AS now`,
    // the compare-and-set: matches only while the row still holds the next slot the evaluation read
    advance: `UPDATE ${t} SET last_slot = COALESCE($3, last_slot), next_slot = $4, updated_at = clock_timestamp()
WHERE name = $1 AND next_slot = $2 AND NOT paused`,
    now: 'SELECT clock_timestamp() AS now',
  };
}
