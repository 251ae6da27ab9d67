// SQL dependency telemetry at ONE seam: the store ports. The Azure Monitor distro behind applicationinsights 3.x
// instruments http, the Azure SDK and pg (setup.ts INSTRUMENTATIONS; mongodb, mysql and redis are off), but not
// tedious (the driver under mssql), so SQL Server calls would not show up as dependencies at all. These decorators wrap every method of the
// TransportStore / ChannelStore / FlowStateStore / ScheduleStore port and record one dependency per call: name `transport.claim`,
// `channel.insertMessage`, …, target `<server>/<database>` (or the store kind), duration, success and a result
// code ('0', or the SQL error number / driver code of the failure). Errors are rethrown unchanged.
//
// The runtime wraps only when telemetry is on (no wrapper cost otherwise) and not for the `postgres` store, whose
// `pg` driver the distro instruments itself (every query becomes a dependency; wrapping too would report each
// call twice). A call made inside a function invocation is a child of the invocation's request: the distro's
// preInvocation hook binds the host's trace context to the invocation.

import type { TelemetryClient } from 'applicationinsights';
import type { ChannelStore } from '../channel/types';
import type { FlowStateStore } from '../flows/store';
import type { ScheduleStore } from '../schedules/types';
import type { StoreSelection } from '../stores/selection';
import type { Stores } from '../stores/open';
import type { TransportStore } from '../transport/types';

export interface DependencyCall {
  /** `transport.<method>`, `channel.<method>`, `flows.<method>` or `schedules.<method>` */
  name: string;
  /** `<server>/<database>`, or the store kind */
  target: string;
  /** the port method */
  data: string;
  startedAt: Date;
  durationMs: number;
  success: boolean;
  /** '0' on success; on failure the SQL Server error number, else the driver's code (ETIMEOUT, a SQLSTATE), else the error's name */
  resultCode: string;
}

export type DependencySink = (call: DependencyCall) => void;

export interface DependencyTelemetry {
  record: DependencySink;
  target: string;
}

type AsyncMethodKeys<T> = { [K in keyof T]-?: T[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof T];

// Every method of each port. A Record keyed by the port's method names: adding a method to a port without
// listing it here fails the type check, so no call escapes the telemetry.
const TRANSPORT_METHODS: Record<Exclude<AsyncMethodKeys<TransportStore>, OptionalTransportMethod>, true> = {
  ensureSchema: true,
  publish: true,
  publishToTopic: true,
  recordSubscriptions: true,
  topicSubscriptions: true,
  claim: true,
  claimLimited: true,
  backOffQueue: true,
  ack: true,
  ackToHistory: true,
  findJob: true,
  searchHistory: true,
  pruneHistoryBatch: true,
  release: true,
  releaseUnstarted: true,
  releaseLostClaim: true,
  renew: true,
  cancel: true,
  reschedule: true,
  setQueuePaused: true,
  queueState: true,
  deadLetter: true,
  pruneDedupKeys: true,
  pruneDeadLetterBatch: true,
  queueStats: true,
  queueNames: true,
  listWaiting: true,
  claimOutlook: true,
  listDeadLetters: true,
  requeueDeadLetter: true,
  deleteDeadLetter: true,
  hasMessage: true,
  now: true,
  close: true,
};

/** Methods a store may lack (the drain checks for them): wrapped when the store has them. */
type OptionalTransportMethod = 'ackAndTakeNext';
const OPTIONAL_TRANSPORT_METHODS: Record<OptionalTransportMethod, true> = { ackAndTakeNext: true };

const CHANNEL_METHODS: Record<AsyncMethodKeys<ChannelStore>, true> = {
  ensureSchema: true,
  saveRegistration: true,
  loadRegistrations: true,
  deleteRegistration: true,
  insertMessage: true,
  loadPending: true,
  loadMessagesById: true,
  claimForDelivery: true,
  claimForRecovery: true,
  routeToCallbacks: true,
  holdForCallback: true,
  isAcknowledged: true,
  subscriptionStart: true,
  findOverdueWithRegistrations: true,
  upsertSubscriber: true,
  heartbeatSubscribers: true,
  deleteSubscriber: true,
  countActiveSubscribers: true,
  pruneExpiredBatch: true,
  channelStats: true,
  close: true,
};

const FLOW_METHODS: Record<AsyncMethodKeys<FlowStateStore>, true> = {
  tryCreate: true,
  load: true,
  acquire: true,
  tryUpdate: true,
  tryAcquireLease: true,
  tryRenewLease: true,
  releaseLease: true,
  observeLease: true,
  tryDelete: true,
  prune: true,
  now: true,
  list: true,
  countByStatus: true,
};

const SCHEDULE_METHODS: Record<AsyncMethodKeys<ScheduleStore>, true> = {
  upsert: true,
  get: true,
  list: true,
  delete: true,
  setPaused: true,
  due: true,
  soonest: true,
  fire: true,
  now: true,
};

export function instrumentTransportStore(store: TransportStore, telemetry: DependencyTelemetry): TransportStore {
  const present = Object.keys(OPTIONAL_TRANSPORT_METHODS).filter((m) => typeof (store as unknown as Record<string, unknown>)[m] === 'function');
  return { kind: store.kind, ...wrapMethods(store, [...Object.keys(TRANSPORT_METHODS), ...present], 'transport', telemetry) } as TransportStore;
}

export function instrumentChannelStore(store: ChannelStore, telemetry: DependencyTelemetry): ChannelStore {
  return wrapMethods(store, Object.keys(CHANNEL_METHODS), 'channel', telemetry) as unknown as ChannelStore;
}

export function instrumentFlowStore(store: FlowStateStore, telemetry: DependencyTelemetry): FlowStateStore {
  // validateCreate is the one synchronous, I/O-free method: passed through unwrapped
  // carriesJobs is a property, not a method: kept, or an instrumented store would stop carrying jobs
  return {
    ...wrapMethods(store, Object.keys(FLOW_METHODS), 'flows', telemetry),
    validateCreate: (state) => store.validateCreate(state),
    ...(store.carriesJobs ? { carriesJobs: true } : {}),
  } as FlowStateStore;
}

export function instrumentScheduleStore(store: ScheduleStore, telemetry: DependencyTelemetry): ScheduleStore {
  return wrapMethods(store, Object.keys(SCHEDULE_METHODS), 'schedules', telemetry) as unknown as ScheduleStore;
}

function wrapMethods(store: object, methods: readonly string[], prefix: string, telemetry: DependencyTelemetry): Record<string, unknown> {
  const wrapped: Record<string, unknown> = {};
  for (const method of methods) {
    const fn = (store as Record<string, unknown>)[method];
    if (typeof fn !== 'function') throw new TypeError(`${prefix} store has no method '${method}'`);
    const name = `${prefix}.${method}`;
    wrapped[method] = async (...args: unknown[]) => {
      const startedAt = new Date();
      const t0 = performance.now();
      const done = (success: boolean, resultCode: string) => {
        try {
          telemetry.record({ name, target: telemetry.target, data: method, startedAt, durationMs: performance.now() - t0, success, resultCode });
        } catch {
          /* telemetry is best effort */
        }
      };
      try {
        const result: unknown = await (fn as (...a: unknown[]) => Promise<unknown>).apply(store, args);
        done(true, '0');
        return result;
      } catch (err) {
        done(false, failureCode(err));
        throw err;
      }
    };
  }
  return wrapped;
}

/**
 * The runtime's one call: both stores wrapped when `record` is given (telemetry on) and the store is not
 * `postgres` (its driver is instrumented by the distro); otherwise the stores as they are.
 */
export async function instrumentStores(stores: Stores, selection: StoreSelection, record: DependencySink | undefined): Promise<Stores> {
  if (!record || selection.kind === 'postgres') return stores;
  const telemetry = { record, target: await dependencyTarget(selection) };
  return {
    transport: instrumentTransportStore(stores.transport, telemetry),
    channel: instrumentChannelStore(stores.channel, telemetry),
    flows: instrumentFlowStore(stores.flows, telemetry),
    ...(stores.schedules ? { schedules: instrumentScheduleStore(stores.schedules, telemetry) } : {}),
    close: () => stores.close(),
  };
}

/** `<server>/<database>` for SQL Server (from the connection string or SQL_SERVER + SQL_DATABASE), else the store kind. */
export async function dependencyTarget(selection: StoreSelection): Promise<string> {
  if (selection.kind !== 'sqlserver') return selection.kind;
  let server = selection.server;
  let database = selection.database;
  if (selection.connectionString) {
    try {
      const { parseSqlConnectionString } = await import('../stores/sqlserver/connection');
      const parsed = parseSqlConnectionString(selection.connectionString);
      server = parsed.server ?? server;
      database = parsed.database ?? database;
    } catch {
      /* the store reports a bad connection string itself */
    }
  }
  return server ? `${server.replace(/^tcp:/i, '')}${database ? `/${database}` : ''}` : 'sqlserver';
}

/** The SQL Server error number, else the driver's code (ESOCKET, ETIMEOUT, a PostgreSQL SQLSTATE), else the error's name. */
export function failureCode(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const e = err as { number?: unknown; code?: unknown; name?: unknown };
    if (typeof e.number === 'number') return String(e.number);
    if (typeof e.code === 'string' || typeof e.code === 'number') return String(e.code);
    if (typeof e.name === 'string' && e.name !== '') return e.name;
  }
  return 'error';
}

/**
 * Application Insights: one `trackDependency` per call, type `SQL`. In applicationinsights 3.x that becomes an
 * OpenTelemetry CLIENT span under the active context (the invocation's, inside a function), exported as a
 * `dependencies` row; spans go through the trace sampler (see setup.ts). The shim drops `resultCode` for
 * non-HTTP types, so a failure's code is also written to customDimensions.resultCode.
 */
export function appInsightsDependencies(client: Pick<TelemetryClient, 'trackDependency'>): DependencySink {
  return (c) =>
    client.trackDependency({
      dependencyTypeName: 'SQL',
      name: c.name,
      data: c.data,
      target: c.target,
      time: c.startedAt,
      duration: c.durationMs,
      success: c.success,
      resultCode: c.resultCode,
      ...(c.success ? {} : { properties: { resultCode: c.resultCode } }),
    });
}
