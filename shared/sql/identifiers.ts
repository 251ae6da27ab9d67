// Identifier rules from the spec (§3.5): simple ASCII identifiers, bracket/double-quote quoted, and derived
// names that keep their suffix by truncating the table stem.

import type { ChannelNames } from '../channel/types';

export type Dialect = 'sqlserver' | 'postgres';

/** sysname is 128 characters; PostgreSQL silently truncates past 63 (NAMEDATALEN - 1). */
export const IDENTIFIER_CAP: Record<Dialect, number> = { sqlserver: 128, postgres: 63 };

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function validateIdentifier(value: string, what: string, dialect: Dialect): string {
  const cap = IDENTIFIER_CAP[dialect];
  if (!IDENTIFIER.test(value)) {
    throw new Error(
      `${what} '${value}' is not a simple identifier: use letters, digits and underscores, not starting with a digit.`,
    );
  }
  if (value.length > cap) {
    throw new Error(`${what} '${value}' is ${value.length} characters long; the ${dialect} limit is ${cap}.`);
  }
  return value;
}

/** stem + suffix, truncating the stem so the result fits the cap (the suffix is never cut). */
export function derivedName(stem: string, suffix: string, cap: number): string {
  if (stem.length + suffix.length <= cap) return stem + suffix;
  if (suffix.length >= cap) throw new Error(`suffix '${suffix}' leaves no room for a name within ${cap} characters`);
  return stem.slice(0, cap - suffix.length) + suffix;
}

export function quoteIdentifier(name: string, dialect: Dialect): string {
  // Names are validated to [A-Za-z0-9_] first, so quoting never needs escaping; it only keeps keywords and case.
  return dialect === 'sqlserver' ? `[${name}]` : `"${name}"`;
}

export interface TransportNames {
  schema: string;
  table: string;
  /** The claim's index: (queue, priority DESC, available_at, created_at), PostgreSQL version 12 (SQL Server 14). */
  readyIndex: string;
  /**
   * PostgreSQL's claim index from version 14: (queue, (ordering_key IS NULL), priority DESC, available_at, created_at),
   * replacing the ready index there, so unkeyed and keyed rows each have their own claim order (ordering-sql.ts).
   */
  claimIndex: string;
  /** The ready index before priorities, (queue, available_at, created_at): built by version 1, dropped by the priority version. */
  legacyReadyIndex: string;
  createdIndex: string;
  /** (queue, dead-letter source queue): keeps a queue's dead-letter count off the other queues' dead letters. */
  deadLetterIndex: string;
  /** (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL: the head-of-key probe before the ready set (superseded by keyOrderIndex). */
  orderingIndex: string;
  /**
   * The ready set (PostgreSQL version 18, SQL Server 20; transport/ready-set.md in the docs): (queue, priority DESC,
   * available_at, seq) WHERE state IS NULL AND lock_id IS NULL: the rows a claim may take, and nothing else.
   */
  readySetIndex: string;
  /** (queue, available_at) WHERE state = 1: scheduled rows, which a claim takes (and so promotes) once due. */
  scheduledIndex: string;
  /** (queue, locked_until) INCLUDE (lock_id) WHERE lock_id IS NOT NULL: leases, for lapses and the lost-claim hand-back. */
  leasedIndex: string;
  /** (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL: a key's rows in publish order (its successor). */
  keyOrderIndex: string;
  /**
   * PostgreSQL version 23: (queue, ordering_key, seq) WHERE state = 2: the rows queued behind their key's head, in
   * publish order (a key's next job), replacing keyOrderIndex there: a row leaves it when it is promoted, so its lease
   * writes no entry into it.
   */
  keyQueueIndex: string;
  /**
   * PostgreSQL version 23: (key_no, seq) WHERE state = 2: a key's queued rows by the key's number (the keys table's
   * id), what the search for a key's next job reads: two integers a tuple, where the key queue index compares two
   * text columns first.
   */
  keyNextIndex: string;
  /** (queue, dead-letter source queue) WHERE dead_letter_reason IS NOT NULL: the dead-letter index without the live rows. */
  deadLettersIndex: string;
  /**
   * PostgreSQL version 22: (queue, dead-letter source queue, created_at) over dead letters only, replacing
   * deadLettersIndex: a source's newest dead letters in index order (the list), and its count.
   */
  deadLettersListIndex: string;
  /** The publish-order sequence behind the seq column. */
  sequence: string;
  /** One row per (queue, ordering key) with rows in the table: their count and whether the key lost its head. */
  keysTable: string;
}

export function transportNames(schema: string, table: string, dialect: Dialect): TransportNames {
  validateIdentifier(schema, 'Schema name', dialect);
  validateIdentifier(table, 'Transport table name', dialect);
  const cap = IDENTIFIER_CAP[dialect];
  const names = {
    schema,
    table,
    readyIndex: derivedName(table, '_priority_ready_idx', cap),
    legacyReadyIndex: derivedName(table, '_ready_idx', cap),
    claimIndex: derivedName(table, '_claim_idx', cap),
    createdIndex: derivedName(table, '_created_idx', cap),
    deadLetterIndex: derivedName(table, '_dead_letter_idx', cap),
    orderingIndex: derivedName(table, '_ordering_idx', cap),
    readySetIndex: derivedName(table, '_ready_set_idx', cap),
    scheduledIndex: derivedName(table, '_scheduled_idx', cap),
    leasedIndex: derivedName(table, '_leased_idx', cap),
    keyOrderIndex: derivedName(table, '_key_order_idx', cap),
    keyQueueIndex: derivedName(table, '_key_queue_idx', cap),
    keyNextIndex: derivedName(table, '_key_next_idx', cap),
    deadLettersIndex: derivedName(table, '_dead_letters_idx', cap),
    deadLettersListIndex: derivedName(table, '_dead_letters_list_idx', cap),
    sequence: derivedName(table, '_seq', cap),
    keysTable: derivedName(table, '_keys', cap),
  };
  assertDistinct([
    ['transport table', names.table],
    ['ready index', names.readyIndex],
    ['legacy ready index', names.legacyReadyIndex],
    ['claim index', names.claimIndex],
    ['created index', names.createdIndex],
    ['dead-letter index', names.deadLetterIndex],
    ['ordering index', names.orderingIndex],
    ['ready-set index', names.readySetIndex],
    ['scheduled index', names.scheduledIndex],
    ['leased index', names.leasedIndex],
    ['key order index', names.keyOrderIndex],
    ['key queue index', names.keyQueueIndex],
    ['key next index', names.keyNextIndex],
    ['dead letters index', names.deadLettersIndex],
    ['dead letters list index', names.deadLettersListIndex],
    ['publish sequence', names.sequence],
    ['ordering keys table', names.keysTable],
  ]);
  return names;
}

/** Object names are compared case-insensitively (SQL Server catalogs usually are; PostgreSQL folds unquoted). */
export function assertDistinct(entries: ReadonlyArray<readonly [string, string]>): void {
  for (let i = 0; i < entries.length; i++) {
    for (let j = i + 1; j < entries.length; j++) {
      const [a, an] = entries[i]!;
      const [b, bn] = entries[j]!;
      if (an.toLowerCase() === bn.toLowerCase()) {
        throw new Error(
          `the ${a} ('${an}') and the ${b} ('${bn}') resolve to the same name — object names are compared ` +
            'case-insensitively. Give each object its own name.',
        );
      }
    }
  }
}

/** Queue names: stored in nvarchar(200); leading/trailing whitespace would be lost to padding rules. */
export function validateQueueName(queue: string): string | null {
  if (queue.length === 0) return 'queue name is empty';
  if (queue.length > 200) return `queue name is ${queue.length} characters long; at most 200 are allowed`;
  if (queue.trim() !== queue) return 'queue name must not begin or end with whitespace';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(queue)) return 'queue name must not contain control characters';
  // a lone surrogate has no UTF-8 form: Node and SQL Server would each substitute their own bytes, and a topic
  // copy's id hashes the queue name's UTF-8 bytes on both sides
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(queue)) {
    return 'queue name must be well-formed UTF-16 (no lone surrogates)';
  }
  return null;
}


/** The channel's three tables, its sequence and index names; all pairwise distinct (case-insensitively). */
export function channelNames(
  schema: string,
  tables: { recoveryTable: string; messageTable: string; subscriberTable: string },
  dialect: Dialect,
): ChannelNames {
  validateIdentifier(schema, 'Schema name', dialect);
  validateIdentifier(tables.recoveryTable, 'Recovery state table name', dialect);
  validateIdentifier(tables.messageTable, 'Channel message table name', dialect);
  validateIdentifier(tables.subscriberTable, 'Channel subscriber table name', dialect);
  const cap = IDENTIFIER_CAP[dialect];
  const names: ChannelNames = {
    schema,
    ...tables,
    ackSequence: derivedName(tables.messageTable, '_ack_seq', cap),
    recoveryExpiresIndex: derivedName(tables.recoveryTable, '_expires_idx', cap),
    messageCorrelationCreatedIndex: derivedName(tables.messageTable, '_correlation_created_idx', cap),
    messageExpiresIndex: derivedName(tables.messageTable, '_expires_idx', cap),
    subscriberExpiresIndex: derivedName(tables.subscriberTable, '_expires_idx', cap),
  };
  assertDistinct([
    ['RecoveryStateTable table', names.recoveryTable],
    ['MessageTable table', names.messageTable],
    ['SubscriberTable table', names.subscriberTable],
    ['ack sequence', names.ackSequence],
  ]);
  return names;
}
