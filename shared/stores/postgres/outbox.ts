// Schema version 3 on PostgreSQL / PGlite: publishing from the caller's own transaction (the outbox pattern).
//
//   {table}_publish(queue, payload, id, correlation_id, headers, delay_seconds) → (message_id uuid, inserted boolean)
//   {table}_publish_topic(topic, payload, id, correlation_id, headers, delay_seconds) → (message_id uuid, copies integer)
//
// Both are thin SECURITY DEFINER wrappers (owner's rights, search_path pinned to pg_catalog) over {table}_enqueue,
// which applies the HTTP publish's rules (shared/transport/publish-request.ts) and inserts in one statement that
// also NOTIFYs like the store's publish (statements.ts), so the row and the wake both take effect at the caller's
// commit and neither on rollback. EXECUTE is revoked from PUBLIC: a caller needs USAGE on the schema and EXECUTE
// on the wrapper only. The SQL Server twins: stores/sqlserver/outbox.ts.

import type { MigrationStatement } from '../migration-plan';
import type { SchemaNames } from '../schema-names';
import { quoteIdentifier } from '../../sql/identifiers';
import { MAX_DELAY_SECONDS, MAX_HEADERS_BYTES, MAX_ORDERING_KEY_CHARS, MAX_PRIORITY, MIN_PRIORITY } from '../../transport/publish-request';
import { CORRELATION_ID_HEADER } from '../../transport/types';
import { notifyPrefix, TRANSPORT_NOTIFY_CHANNEL } from './statements';
import { STATE_QUEUED, STATE_SCHEDULED } from './ready-set';

/** The SQL publish's payload limit: MAX_MESSAGE_BYTES' default, fixed when version 3 is applied. */
export const SQL_PUBLISH_MAX_PAYLOAD_BYTES = 262_144;
/** Errors: 22023 (invalid_parameter_value) like HTTP 400, 54000 (program_limit_exceeded) like HTTP 413. */
export const PG_PUBLISH_INVALID = '22023';
export const PG_PUBLISH_TOO_LARGE = '54000';

const q = (n: string) => quoteIdentifier(n, 'postgres');
// What JavaScript's String.prototype.trim removes (the HTTP rules use trim()), as a regex class.
const JS_WHITESPACE = String.raw`[\t\n\u000b\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]`;

export function postgresOutboxNames(n: SchemaNames) {
  return {
    publish: `${q(n.schema)}.${q(n.publishRoutine)}`,
    publishTopic: `${q(n.schema)}.${q(n.publishTopicRoutine)}`,
    enqueue: `${q(n.schema)}.${q(n.enqueueRoutine)}`,
  };
}

const SIGNATURE = 'text, text, text, text, text, double precision';

/** Version 16's signatures: the job fields (priority; an ordering key for a queue publish) after version 3's. */
const SIGNATURE_16 = `${SIGNATURE}, integer, text`;
const TOPIC_SIGNATURE_16 = `${SIGNATURE}, integer`;

/**
 * The shared body: version 3's, version 16's with priority and an ordering key (HTTP's rules for both), or version
 * 18's, which also files the row in the ready set (ready-set.ts): a delayed row is scheduled, and a keyed row is
 * counted into its key under the key row's lock and queued behind the key's head when the key has one.
 */
function enqueueFunction(n: SchemaNames, jobFields = false, readySet = false): string {
  const f = postgresOutboxNames(n);
  const t = `${q(n.schema)}.${q(n.transport.table)}`;
  const subs = `${q(n.schema)}.${q(n.subscriptionsTable)}`;
  const invalid = (message: string) => `RAISE EXCEPTION USING ERRCODE = '${PG_PUBLISH_INVALID}', MESSAGE = ${message}`;
  const tooLarge = (message: string) => `RAISE EXCEPTION USING ERRCODE = '${PG_PUBLISH_TOO_LARGE}', MESSAGE = ${message}`;
  return `CREATE OR REPLACE FUNCTION ${f.enqueue}(
    p_kind text, p_name text, p_payload text, p_id text, p_correlation_id text, p_headers text, p_delay_seconds double precision,${jobFields ? '\n    p_priority integer, p_ordering_key text,' : ''}
    OUT message_id uuid, OUT copies integer)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_headers jsonb := '{}'::jsonb;
  v_doc json;
  v_entry record;
  v_value text;
  v_delay_ms bigint;
  v_woken bigint;
  v_bytes bytea;${readySet ? '\n  v_pending integer;\n  v_key_no bigint;' : ''}
BEGIN
  -- the queue or topic name: validateQueueName's rules
  IF p_name IS NULL OR char_length(p_name) = 0 OR char_length(p_name) > 200 THEN
    ${invalid(`format('AsyncResponse publish: the %s name must be 1 to 200 characters', p_kind)`)};
  END IF;
  IF p_name ~ '^${JS_WHITESPACE}|${JS_WHITESPACE}$' THEN
    ${invalid(`format('AsyncResponse publish: the %s name must not begin or end with whitespace', p_kind)`)};
  END IF;
  IF p_name ~ '[\\u0001-\\u001f\\u007f]' THEN
    ${invalid(`format('AsyncResponse publish: the %s name must not contain control characters', p_kind)`)};
  END IF;
  -- payload: required, one JSON value, at most ${SQL_PUBLISH_MAX_PAYLOAD_BYTES} UTF-8 bytes, stored as given
  IF p_payload IS NULL THEN
    ${invalid(`'AsyncResponse publish: payload is required'`)};
  END IF;
  BEGIN
    v_doc := p_payload::json;
  EXCEPTION WHEN data_exception THEN
    ${invalid(`'AsyncResponse publish: payload is not valid JSON'`)};
  END;
  IF octet_length(p_payload) > ${SQL_PUBLISH_MAX_PAYLOAD_BYTES} THEN
    ${tooLarge(`format('AsyncResponse publish: payload is %s bytes; the limit is ${SQL_PUBLISH_MAX_PAYLOAD_BYTES}', octet_length(p_payload))`)};
  END IF;
  -- id: a UUID in its 8-4-4-4-12 text form, stored lower-cased; else a UUIDv7 (time-ordered, as the app makes)
  IF p_id IS NOT NULL THEN
    IF p_id !~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' THEN
      ${invalid(`'AsyncResponse publish: id must be a UUID'`)};
    END IF;
    message_id := lower(p_id)::uuid;
  ELSE
    v_bytes := overlay(uuid_send(gen_random_uuid())
      PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6);
    message_id := encode(set_byte(v_bytes, 6, (get_byte(v_bytes, 6) & 15) | 112), 'hex')::uuid;
  END IF;
  -- headers: a JSON object of at most 64 string values, ${MAX_HEADERS_BYTES} bytes as given; AR-* names are the transport's
  IF p_headers IS NOT NULL THEN
    BEGIN
      v_doc := p_headers::json;
    EXCEPTION WHEN data_exception THEN
      ${invalid(`'AsyncResponse publish: headers are not valid JSON'`)};
    END;
    IF json_typeof(v_doc) <> 'object' THEN
      ${invalid(`'AsyncResponse publish: headers must be a JSON object of string values'`)};
    END IF;
    IF octet_length(p_headers) > ${MAX_HEADERS_BYTES} THEN
      ${tooLarge(`format('AsyncResponse publish: headers are %s bytes as JSON; the limit is ${MAX_HEADERS_BYTES}', octet_length(p_headers))`)};
    END IF;
    BEGIN
      IF (SELECT count(*) FROM json_each(v_doc)) > 64 THEN
        ${invalid(`'AsyncResponse publish: headers have more than 64 entries'`)};
      END IF;
      FOR v_entry IN SELECT key, value FROM json_each(v_doc) LOOP
        IF json_typeof(v_entry.value) <> 'string' THEN
          ${invalid(`format('AsyncResponse publish: header %s must be a string', left(v_entry.key, 64))`)};
        END IF;
        v_value := v_entry.value #>> '{}';
        IF char_length(v_entry.key) = 0 OR char_length(v_entry.key) > 256 THEN
          ${invalid(`'AsyncResponse publish: a header name must be 1 to 256 characters'`)};
        END IF;
        IF v_entry.key = '__proto__' THEN
          ${invalid(`'AsyncResponse publish: header __proto__ is not a usable header name'`)};
        END IF;
        IF v_entry.key ~ '[\\u0001-\\u001f\\u007f]' THEN
          ${invalid(`'AsyncResponse publish: a header name must not contain control characters'`)};
        END IF;
        IF v_value ~ '[\\u0001-\\u0008\\u000a-\\u001f\\u007f]' THEN
          ${invalid(`format('AsyncResponse publish: header %s must not contain control characters (tab is allowed)', left(v_entry.key, 64))`)};
        END IF;
        IF lower(v_entry.key) LIKE 'ar-%' THEN
          ${invalid(`format('AsyncResponse publish: header %s is reserved: AR-* headers are set by the transport (use correlation_id for ${CORRELATION_ID_HEADER})', left(v_entry.key, 64))`)};
        END IF;
        v_headers := v_headers || jsonb_build_object(v_entry.key, v_value);
      END LOOP;
    EXCEPTION WHEN untranslatable_character OR character_not_in_repertoire OR invalid_text_representation THEN
      -- \\u0000 or a lone surrogate escape: text cannot hold it (the HTTP rules refuse both too)
      ${invalid(`'AsyncResponse publish: headers must not contain control characters or lone surrogates'`)};
    END;
  END IF;
  -- correlation id: shared/correlation-id.ts's rules; stored as the ${CORRELATION_ID_HEADER} header
  IF p_correlation_id IS NOT NULL THEN
    IF char_length(p_correlation_id) = 0 OR char_length(p_correlation_id) > 400 THEN
      ${invalid(`'AsyncResponse publish: correlation_id must be 1 to 400 characters'`)};
    END IF;
    IF p_correlation_id ~ '^${JS_WHITESPACE}|${JS_WHITESPACE}$' THEN
      ${invalid(`'AsyncResponse publish: correlation_id must not begin or end with whitespace'`)};
    END IF;
    IF p_correlation_id ~ '[\\u0001-\\u001f\\u007f-\\u009f]' THEN
      ${invalid(`'AsyncResponse publish: correlation_id must not contain control characters'`)};
    END IF;
    v_headers := v_headers || jsonb_build_object('${CORRELATION_ID_HEADER}', p_correlation_id);
  END IF;
  -- delay: 0 to ${MAX_DELAY_SECONDS} seconds (NULL = 0), rounded to milliseconds like Math.round
  IF p_delay_seconds IS NOT NULL AND NOT (p_delay_seconds >= 0 AND p_delay_seconds <= ${MAX_DELAY_SECONDS}) THEN
    ${invalid(`'AsyncResponse publish: delay_seconds must be a number from 0 to ${MAX_DELAY_SECONDS} (3650 days)'`)};
  END IF;
  v_delay_ms := floor(coalesce(p_delay_seconds, 0) * 1000 + 0.5)::bigint;${jobFields ? jobFieldRules(invalid) : ''}
  IF p_kind = 'topic' AND EXISTS (SELECT 1 FROM ${subs} AS s WHERE s.topic = p_name AND char_length(s.topic || ':' || s.subscription) > 200) THEN
    ${invalid(`'AsyncResponse publish: a subscription queue name of this topic is longer than 200 characters'`)};
  END IF;${readySet ? keyedInsert(n) : ''}
  -- one statement: a queue publish inserts the message; a topic publish one copy per subscription, each with the
  -- id topicCopyId() derives (transport/topic-names.ts). Existing ids are skipped; due rows wake their queue.
  WITH target AS (
    SELECT p_name AS queue, message_id AS id WHERE p_kind = 'queue'
    UNION ALL
    SELECT c.queue, encode(set_byte(set_byte(d.h, 6, (get_byte(d.h, 6) & 15) | 128), 8, (get_byte(d.h, 8) & 63) | 128), 'hex')::uuid
    FROM (SELECT s.topic || ':' || s.subscription AS queue FROM ${subs} AS s WHERE p_kind = 'topic' AND s.topic = p_name) AS c
    CROSS JOIN LATERAL (SELECT substring(sha256(convert_to(lower(message_id::text) || E'\\n' || c.queue, 'UTF8')) FROM 1 FOR 16) AS h) AS d
  ),
  ins AS (
    INSERT INTO ${t} AS m (id, queue, payload_json, headers_json, created_at, available_at${jobFields ? ', priority, ordering_key' : ''}${readySet ? ', state' : ''})
    SELECT target.id, target.queue, p_payload, v_headers::text, clock_timestamp(),
           CASE WHEN v_delay_ms > 0 THEN clock_timestamp() + v_delay_ms * interval '1 millisecond' ELSE clock_timestamp() END${jobFields ? ',\n           coalesce(p_priority, 0)::smallint, p_ordering_key' : ''}${readySet ? `, CASE WHEN v_delay_ms > 0 THEN ${STATE_SCHEDULED} END` : ''}
    FROM target
    ORDER BY target.queue
    ON CONFLICT (id) DO NOTHING
    RETURNING m.queue, m.available_at <= clock_timestamp() AS due),
  woken AS (
    SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', '${notifyPrefix(n.transport)}' || w.queue) FROM (SELECT DISTINCT ins.queue FROM ins WHERE ins.due) AS w)
  SELECT (SELECT count(*) FROM ins)::integer, (SELECT count(*) FROM woken) INTO copies, v_woken;
END
$fn$`;
}

/**
 * Version 18's keyed queue publish (ready-set.ts): the id tested first (a duplicate inserts nothing and counts
 * nothing), then the key counted and the row inserted in a block whose unique violation (a concurrent insert of the
 * same id) undoes both. The row wakes its queue only as the key's head.
 */
function keyedInsert(n: SchemaNames): string {
  const t = `${q(n.schema)}.${q(n.transport.table)}`;
  const k = `${q(n.schema)}.${q(n.transport.keysTable)}`;
  const seq = `${q(n.schema)}.${q(n.transport.sequence)}`;
  return `
  IF p_kind = 'queue' AND p_ordering_key IS NOT NULL THEN
    copies := 0;
    IF EXISTS (SELECT 1 FROM ${t} AS e WHERE e.id = message_id) THEN
      RETURN;
    END IF;
    BEGIN
      INSERT INTO ${k} AS kk (queue, ordering_key, backlog) VALUES (p_name, p_ordering_key, 1)
      ON CONFLICT (queue, ordering_key) DO UPDATE SET backlog = kk.backlog + 1
      RETURNING kk.backlog, kk.id INTO v_pending, v_key_no;
      INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq, key_no)
      VALUES (message_id, p_name, p_payload, v_headers::text, clock_timestamp(),
              CASE WHEN v_delay_ms > 0 THEN clock_timestamp() + v_delay_ms * interval '1 millisecond' ELSE clock_timestamp() END,
              coalesce(p_priority, 0)::smallint, p_ordering_key,
              CASE WHEN v_pending > 1 THEN ${STATE_QUEUED} WHEN v_delay_ms > 0 THEN ${STATE_SCHEDULED} END, nextval('${seq}'), v_key_no);
      copies := 1;
    EXCEPTION WHEN unique_violation THEN
      RETURN;
    END;
    IF v_pending = 1 AND v_delay_ms = 0 THEN
      PERFORM pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', '${notifyPrefix(n.transport)}' || p_name);
    END IF;
    RETURN;
  END IF;`;
}

/** Version 16's checks of priority and the ordering key: publish-request.ts's rules, with its messages. */
function jobFieldRules(invalid: (message: string) => string): string {
  return `
  -- priority: a smallint (NULL = 0), higher is claimed first
  IF p_priority IS NOT NULL AND (p_priority < ${MIN_PRIORITY} OR p_priority > ${MAX_PRIORITY}) THEN
    ${invalid(`'AsyncResponse publish: priority must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY} (higher is claimed first)'`)};
  END IF;
  -- ordering key: a queue publish's only; 1 to ${MAX_ORDERING_KEY_CHARS} characters, no control characters, compared exactly
  IF p_ordering_key IS NOT NULL THEN
    IF p_kind <> 'queue' THEN
      ${invalid(`'AsyncResponse publish: ordering keys belong to a queue publish'`)};
    END IF;
    IF char_length(p_ordering_key) = 0 OR char_length(p_ordering_key) > ${MAX_ORDERING_KEY_CHARS} THEN
      ${invalid(`'AsyncResponse publish: ordering_key must be 1 to ${MAX_ORDERING_KEY_CHARS} characters'`)};
    END IF;
    IF p_ordering_key ~ '[\\u0001-\\u001f\\u007f]' THEN
      ${invalid(`'AsyncResponse publish: ordering_key must not contain control characters'`)};
    END IF;
  END IF;`;
}

function wrapper(n: SchemaNames, kind: 'queue' | 'topic'): string {
  const f = postgresOutboxNames(n);
  const name = kind === 'queue' ? f.publish : f.publishTopic;
  const result = kind === 'queue' ? 'OUT inserted boolean' : 'OUT copies integer';
  const pick = kind === 'queue' ? 'e.copies > 0' : 'e.copies';
  return `CREATE OR REPLACE FUNCTION ${name}(
    ${kind} text, payload text, id text DEFAULT NULL, correlation_id text DEFAULT NULL, headers text DEFAULT NULL,
    delay_seconds double precision DEFAULT 0,
    OUT message_id uuid, ${result})
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT e.message_id, ${pick} FROM ${f.enqueue}('${kind}', $1, $2, $3, $4, $5, $6) AS e
$fn$`;
}

/** Version 3's statements: the shared body, the two wrappers, and EXECUTE taken from PUBLIC on all three. */
export function postgresOutboxStatements(n: SchemaNames): MigrationStatement[] {
  const f = postgresOutboxNames(n);
  return [
    { name: 'create enqueue function', text: enqueueFunction(n) },
    { name: 'create publish function', text: wrapper(n, 'queue') },
    { name: 'create publish topic function', text: wrapper(n, 'topic') },
    {
      name: 'revoke execute from public',
      text: `REVOKE ALL ON FUNCTION ${f.enqueue}(text, ${SIGNATURE}), ${f.publish}(${SIGNATURE}), ${f.publishTopic}(${SIGNATURE}) FROM PUBLIC`,
    },
  ];
}

/** Version 16's wrappers: version 3's parameters, then `priority` (both) and `ordering_key` (queue), defaulted. */
function wrapper16(n: SchemaNames, kind: 'queue' | 'topic'): string {
  const f = postgresOutboxNames(n);
  const name = kind === 'queue' ? f.publish : f.publishTopic;
  const result = kind === 'queue' ? 'OUT inserted boolean' : 'OUT copies integer';
  const pick = kind === 'queue' ? 'e.copies > 0' : 'e.copies';
  const extra = kind === 'queue' ? ', priority integer DEFAULT 0, ordering_key text DEFAULT NULL' : ', priority integer DEFAULT 0';
  const pass = kind === 'queue' ? '$7, $8' : '$7, NULL';
  return `CREATE FUNCTION ${name}(
    ${kind} text, payload text, id text DEFAULT NULL, correlation_id text DEFAULT NULL, headers text DEFAULT NULL,
    delay_seconds double precision DEFAULT 0${extra},
    OUT message_id uuid, ${result})
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT e.message_id, ${pick} FROM ${f.enqueue}('${kind}', $1, $2, $3, $4, $5, $6, ${pass}) AS e
$fn$`;
}

/**
 * A wrapper replaced with a longer signature: PostgreSQL cannot add parameters in place (CREATE OR REPLACE would make
 * an overload, and a call with version 3's arguments would be ambiguous), so the old one is dropped and the new one
 * created in one DO block, and every role that held EXECUTE on the old one gets it on the new one (EXECUTE stays
 * revoked from PUBLIC): a caller granted as docs/outbox.md says keeps publishing across the upgrade.
 */
function replaceWrapper(n: SchemaNames, kind: 'queue' | 'topic'): string {
  const f = postgresOutboxNames(n);
  const name = kind === 'queue' ? f.publish : f.publishTopic;
  const newSignature = `${name}(${kind === 'queue' ? SIGNATURE_16 : TOPIC_SIGNATURE_16})`;
  const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;
  return `DO $migrate$
DECLARE
  v_old regprocedure := to_regprocedure(${literal(`${name}(${SIGNATURE})`)});
  v_grantees text[] := '{}';
  v_grantee text;
BEGIN
  IF v_old IS NOT NULL THEN
    SELECT coalesce(array_agg(DISTINCT a.grantee::regrole::text), '{}') INTO v_grantees
    FROM pg_catalog.pg_proc AS p CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
    WHERE p.oid = v_old AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner;
    EXECUTE format('DROP FUNCTION %s', v_old);
  END IF;
  IF to_regprocedure(${literal(newSignature)}) IS NULL THEN
    EXECUTE ${literal(wrapper16(n, kind))};
  END IF;
  EXECUTE ${literal(`REVOKE ALL ON FUNCTION ${newSignature} FROM PUBLIC`)};
  FOREACH v_grantee IN ARRAY v_grantees LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', ${literal(newSignature)}, v_grantee);
  END LOOP;
END
$migrate$`;
}

/**
 * Version 16: priority and ordering keys from SQL (issue 17 §1). The shared body gains both (version 3's stays until
 * its wrappers are replaced, then goes), the wrappers gain `priority` and (queue) `ordering_key`, defaulted, with
 * their grants carried over.
 */
export function postgresOutboxJobFieldsStatements(n: SchemaNames): MigrationStatement[] {
  const f = postgresOutboxNames(n);
  return [
    { name: 'create enqueue function with job fields', text: enqueueFunction(n, true) },
    { name: 'replace publish function', text: replaceWrapper(n, 'queue') },
    { name: 'replace publish topic function', text: replaceWrapper(n, 'topic') },
    { name: 'drop version 3 enqueue function', text: `DROP FUNCTION IF EXISTS ${f.enqueue}(text, ${SIGNATURE})` },
    { name: 'revoke execute on enqueue from public', text: `REVOKE ALL ON FUNCTION ${f.enqueue}(text, ${SIGNATURE_16}) FROM PUBLIC` },
  ];
}

/**
 * Version 18: the shared body files SQL publishes in the ready set (same signature as version 16's: the wrappers and
 * their grants are untouched).
 */
export function postgresOutboxReadySetStatements(n: SchemaNames): MigrationStatement[] {
  const f = postgresOutboxNames(n);
  return [
    { name: 'replace enqueue function for the ready set', text: enqueueFunction(n, true, true) },
    { name: 'revoke execute on enqueue from public', text: `REVOKE ALL ON FUNCTION ${f.enqueue}(text, ${SIGNATURE_16}) FROM PUBLIC` },
  ];
}
