// The names the schema versions cover: the transport table, the channel's objects, and the two tables named
// after the transport table (spec 003: the subscriptions table takes the message table's base name with a
// Subscriptions suffix; the migrations table is named the same way, so two components with their own tables
// in one schema keep their own versions).

import type { ChannelNames } from '../channel/types';
import { assertDistinct, derivedName, IDENTIFIER_CAP, validateIdentifier, type Dialect, type TransportNames } from '../sql/identifiers';

/** The durable-flow state table's default name (the spec's). */
export const DEFAULT_FLOW_STATE_TABLE = 'asyncresponse_flow_state';

export interface SchemaNames {
  schema: string;
  transport: TransportNames;
  channel: ChannelNames;
  /** version int PK, name, applied_at (database clock). */
  migrationsTable: string;
  /** Durable topic subscriptions (topic, subscription, created_at); version 2. */
  subscriptionsTable: string;
  /** Version 3, the SQL publish (outbox): procedures on SQL Server, functions on PostgreSQL. */
  publishRoutine: string;
  publishTopicRoutine: string;
  /** The shared body the two call (not granted to callers). */
  enqueueRoutine: string;
  /** Durable-flow ledgers, one row per run (flow_id with a binary collation); SQL Server version 7, PostgreSQL 5. */
  flowStateTable: string;
  /** (expires_at_utc): prune. */
  flowStateExpiresIndex: string;
  /** (status, updated_at_utc, flow_id) including flow_name, expires_at_utc: list newest first, countByStatus. */
  flowStateListIndex: string;
  /** A run's leading completed steps, one row each (flows/step-rows.ts); PostgreSQL version 20, SQL Server 29. */
  flowStepsTable: string;
  /** Recurring schedules (shared/schedules), one row per schedule (PostgreSQL version 6, SQL Server version 8). */
  schedulesTable: string;
  /** The schedules' due index (next slot of the unpaused). */
  schedulesDueIndex: string;
}

export function schemaNames(
  transport: TransportNames,
  channel: ChannelNames,
  dialect: Dialect,
  flowStateTable: string = DEFAULT_FLOW_STATE_TABLE,
): SchemaNames {
  const cap = IDENTIFIER_CAP[dialect];
  validateIdentifier(flowStateTable, 'flow state table', dialect);
  const names: SchemaNames = {
    schema: transport.schema,
    transport,
    channel,
    migrationsTable: derivedName(transport.table, '_migrations', cap),
    subscriptionsTable: subscriptionsTableName(transport, dialect),
    publishRoutine: derivedName(transport.table, '_publish', cap),
    publishTopicRoutine: derivedName(transport.table, '_publish_topic', cap),
    enqueueRoutine: derivedName(transport.table, '_enqueue', cap),
    flowStateTable,
    flowStateExpiresIndex: derivedName(flowStateTable, '_expires_idx', cap),
    flowStateListIndex: derivedName(flowStateTable, '_list_idx', cap),
    flowStepsTable: derivedName(flowStateTable, '_steps', cap),
    schedulesTable: schedulesTableName(transport, dialect),
    schedulesDueIndex: derivedName(transport.table, '_schedules_due_idx', cap),
  };
  const inSchema: Array<[string, string]> = [
    ['transport table', transport.table],
    ['migrations table', names.migrationsTable],
    ['subscriptions table', names.subscriptionsTable],
    ['publish routine', names.publishRoutine],
    ['publish topic routine', names.publishTopicRoutine],
    ['enqueue routine', names.enqueueRoutine],
    ['flow state table', names.flowStateTable],
    // PostgreSQL indexes share the schema's namespace with its tables
    ['flow state expires index', names.flowStateExpiresIndex],
    ['flow state list index', names.flowStateListIndex],
    ['flow steps table', names.flowStepsTable],
    ['schedules table', names.schedulesTable],
  ];
  if (channel.schema.toLowerCase() === transport.schema.toLowerCase()) {
    inSchema.push(
      ['RecoveryStateTable table', channel.recoveryTable],
      ['MessageTable table', channel.messageTable],
      ['SubscriberTable table', channel.subscriberTable],
      ['ack sequence', channel.ackSequence],
    );
  }
  assertDistinct(inSchema);
  return names;
}

/** The subscriptions table of a transport table (the transport stores read it for the topic fan-out). */
export function subscriptionsTableName(transport: TransportNames, dialect: Dialect): string {
  return derivedName(transport.table, '_subscriptions', IDENTIFIER_CAP[dialect]);
}

/** The schedules table of a transport table (`…_schedules`, like the subscriptions table). */
export function schedulesTableName(transport: TransportNames, dialect: Dialect): string {
  return derivedName(transport.table, '_schedules', IDENTIFIER_CAP[dialect]);
}
