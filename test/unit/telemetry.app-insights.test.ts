// The App Insights implementation against the REAL applicationinsights 3.x SDK, without Azure: started through
// startTelemetry with a syntactically valid fake connection string, full trace sampling, and an in-memory HTTP
// client in place of the exporters' transport. Everything up to the bytes the exporters would POST to the
// ingestion endpoint is real (trackMetric → OpenTelemetry histogram → metric reader → Azure Monitor exporter
// → envelopes; trackDependency → span → sampler → batch processor → exporter); the test reads those envelopes.
// No socket may be opened: statsbeat is disabled and the Azure Functions environment variables spare the
// resource detection its IMDS probe (169.254.169.254). The SDK starts with our local `@azure/functions-core`
// installed (as under the local host), so the distro registers its preInvocation hook the way it does in Azure.

import type { AzureMonitorOpenTelemetryOptions } from 'applicationinsights';
import { createRequire } from 'node:module';
import net from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadFunctionApp, type RegisteredHook } from '../../local/functions-core';
import type { TransportStore } from '../../shared/transport/types';
import { instrumentTransportStore } from '../../shared/telemetry/dependencies';
import { METRIC } from '../../shared/telemetry/metric-names';
import { startTelemetry, type Telemetry } from '../../shared/telemetry/setup';
import { drainReport } from '../support/drain-report';

const FAKE_CONNECTION_STRING = 'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:9/';
const TEST_ENV: Record<string, string> = {
  APPLICATIONINSIGHTS_STATSBEAT_DISABLED: 'true',
  FUNCTIONS_VERSION: '4',
  WEBSITE_SITE_NAME: 'asyncresponse-test',
};

interface Envelope {
  name: string;
  tags: Record<string, string>;
  data: { baseType: string; baseData: Record<string, unknown> & { properties?: Record<string, string> } };
}

const envelopes: Envelope[] = [];
const requests: string[] = [];
type HttpClient = NonNullable<NonNullable<AzureMonitorOpenTelemetryOptions['azureMonitorExporterOptions']>['httpClient']>;

/** Stands in for the exporters' HTTP transport (an @azure/core-rest-pipeline HttpClient): records, answers 200. */
const inMemoryHttpClient: HttpClient = {
  async sendRequest(request) {
    requests.push(request.url);
    const raw = request.body;
    const bytes = typeof raw === 'string' ? Buffer.from(raw) : Buffer.from(raw as Uint8Array);
    const text = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
    const parsed = JSON.parse(text) as Envelope | Envelope[];
    envelopes.push(...(Array.isArray(parsed) ? parsed : [parsed]));
    return {
      status: 200,
      headers: request.headers,
      request,
      bodyAsText: JSON.stringify({ itemsReceived: 1, itemsAccepted: 1, errors: [] }),
    };
  },
};

const saved: Record<string, string | undefined> = {};
const connects: unknown[] = [];
let telemetry: Telemetry;
let preInvocationHooks: RegisteredHook[] = [];

beforeAll(async () => {
  for (const [k, v] of Object.entries(TEST_ENV)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  const connect = net.Socket.prototype.connect;
  vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    connects.push(args[0]);
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  });
  const table = await loadFunctionApp(() => {
    telemetry = startTelemetry(
      { APPLICATIONINSIGHTS_CONNECTION_STRING: FAKE_CONNECTION_STRING },
      {
        azureMonitor: {
          tracesPerSecond: 0, // 0 = no rate limit: the percentage sampler at samplingRatio 1 keeps every span
          samplingRatio: 1,
          enableStandardMetrics: false,
          azureMonitorExporterOptions: { httpClient: inMemoryHttpClient, disableOfflineStorage: true },
        },
      },
    );
  });
  preInvocationHooks = table.hooks.filter((h) => h.name === 'preInvocation' && !h.disposed);
});

afterAll(async () => {
  await telemetry?.shutdown();
  vi.restoreAllMocks();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const ours = () => envelopes.filter((e) => e.name === 'Microsoft.ApplicationInsights.Metric').flatMap((e) => {
  const d = e.data.baseData as { metrics: Array<{ name: string; value: number; count: number; max: number; min: number }>; properties: Record<string, string> };
  return d.metrics.filter((m) => m.name.startsWith('asyncresponse.')).map((m) => ({ ...m, properties: d.properties }));
});

describe('App Insights metrics and dependencies through the real SDK (in memory)', () => {
  it('started without loading the SDK packages it does not use (setup.ts isUnusedSdkPackage: cold start)', () => {
    const loaded = Object.keys(createRequire(__filename).cache);
    expect(loaded.some((f) => /node_modules\/@azure\/monitor-opentelemetry\//.test(f)), 'the distro is loaded').toBe(true);
    const unused = loaded.filter((f) =>
      /node_modules\/(@opentelemetry\/(exporter-[a-z-]+|otlp-exporter-base|otlp-grpc-exporter-base|propagator-(b3|jaeger)|configuration|instrumentation-(mongodb|mysql|redis|bunyan|winston|console))|@azure\/identity)\//.test(f),
    );
    expect(unused).toEqual([]);
  });

  it("keeps the distro's pg and http instrumentations (the postgres store's queries, callbacks and other outgoing calls)", () => {
    const req = createRequire(__filename);
    const pg = req('pg') as { Client: { prototype: { query: { __wrapped?: boolean } } } };
    expect(pg.Client.prototype.query.__wrapped, 'pg Client.query patched by @opentelemetry/instrumentation-pg').toBe(true);
    const http = req('http') as { request: { __wrapped?: boolean } };
    expect(http.request.__wrapped, 'http.request patched by @opentelemetry/instrumentation-http').toBe(true);
  });

  it('loads one copy of each stable OpenTelemetry package (package.json overrides: cold start)', () => {
    const copies = new Map<string, Set<string>>();
    for (const f of Object.keys(createRequire(__filename).cache)) {
      const m = /^(.*node_modules\/@opentelemetry\/(core|resources|sdk-metrics|sdk-trace|sdk-trace-base|sdk-trace-node|context-async-hooks))\//.exec(f);
      if (m) copies.set(m[2]!, (copies.get(m[2]!) ?? new Set()).add(m[1]!));
    }
    expect(copies.get('core')?.size, 'the SDK loaded @opentelemetry/core').toBeGreaterThan(0);
    for (const [name, dirs] of copies) expect([...dirs], name).toHaveLength(1);
  });

  it('starts, and startTelemetry is idempotent', () => {
    expect(telemetry.enabled).toBe(true);
    expect(telemetry.dependencies).toBeTypeOf('function');
    expect(startTelemetry({ APPLICATIONINSIGHTS_CONNECTION_STRING: FAKE_CONNECTION_STRING })).toBe(telemetry);
  });

  it('exports customMetrics rows with our names and dimensions, aggregated per name and dimension set', async () => {
    const report = drainReport;
    const m = telemetry.metrics;
    m.jobsPublished('worker', 3);
    m.jobsPublished('worker', 2);
    m.drainFinished(report({ claimed: 4, completed: 2, retried: 1, deadLettered: 1, released: 0, durationMs: 800, stoppedBy: 'idle' }));
    m.drainFinished(report({ claimed: 1, completed: 1, durationMs: 1200, stoppedBy: 'budget' }));
    m.queueDepth({ queue: 'worker', ready: 7, delayed: 1, leased: 2, deadLettered: 3, oldestReadyAgeSeconds: 42.5 });
    m.sweepFinished({ overdue: 0, routed: 0, failed: 0, cutShort: false, pruned: null, durationMs: 15 });
    m.pruned('deadletters', 1000);
    m.responsePublished('live', 'http');
    await telemetry.flush();

    const rows = ours();
    const row = (name: string, props: Record<string, string>) => {
      const found = rows.filter((r) => r.name === name && JSON.stringify(r.properties) === JSON.stringify(props));
      expect(found, `${name} ${JSON.stringify(props)} in ${JSON.stringify(rows)}`).toHaveLength(1);
      return found[0]!;
    };
    // Counters: valueSum over the minute, one row per name + dimension set.
    expect(row(METRIC.jobsPublished, { queue: 'worker' })).toMatchObject({ value: 5, count: 2, max: 3, min: 2 });
    expect(row(METRIC.jobsClaimed, { queue: 'worker' })).toMatchObject({ value: 5, count: 2 });
    expect(row(METRIC.jobsCompleted, { queue: 'worker' })).toMatchObject({ value: 3, count: 2 });
    expect(row(METRIC.jobsFailed, { queue: 'worker', outcome: 'redelivered' })).toMatchObject({ value: 1, count: 1 });
    expect(row(METRIC.jobsFailed, { queue: 'worker', outcome: 'deadlettered' })).toMatchObject({ value: 1, count: 1 });
    expect(row(METRIC.jobsDeadLettered, { queue: 'worker' })).toMatchObject({ value: 1 });
    expect(row(METRIC.jobsRedelivered, { queue: 'worker', outcome: 'failed' })).toMatchObject({ value: 1 });
    // Values: sum / count / max, split by the drain's outcome.
    expect(row(METRIC.drainDuration, { queue: 'worker', outcome: 'idle' })).toMatchObject({ value: 800, count: 1, max: 800 });
    expect(row(METRIC.drainDuration, { queue: 'worker', outcome: 'budget' })).toMatchObject({ value: 1200, count: 1 });
    // Gauges: read with max(valueMax).
    expect(row(METRIC.queueReady, { queue: 'worker' })).toMatchObject({ max: 7 });
    expect(row(METRIC.queueDelayed, { queue: 'worker' })).toMatchObject({ max: 1 });
    expect(row(METRIC.queueLeased, { queue: 'worker' })).toMatchObject({ max: 2 });
    expect(row(METRIC.queueDeadLettered, { queue: 'worker' })).toMatchObject({ max: 3 });
    expect(row(METRIC.queueOldestReadyAge, { queue: 'worker' })).toMatchObject({ max: 42.5 });
    expect(row(METRIC.sweepDuration, {})).toMatchObject({ value: 15 });
    expect(row(METRIC.pruneDeleted, { table: 'deadletters' })).toMatchObject({ value: 1000 });
    expect(row(METRIC.responsesPublished, { delivery: 'live', source: 'http' })).toMatchObject({ value: 1 });
    // Zero counters send nothing (no `released` row), and nothing else was sent.
    expect(rows.filter((r) => r.name === METRIC.jobsRedelivered)).toHaveLength(1);
    expect(rows).toHaveLength(17);

    // Metric envelopes are never sampled.
    for (const e of envelopes.filter((x) => x.name === 'Microsoft.ApplicationInsights.Metric')) {
      expect((e as unknown as { sampleRate: number }).sampleRate).toBe(100);
    }
  });

  it('exports a SQL dependency per store call, failures with their code, and the wrapper rethrows', async () => {
    const lockVictim = Object.assign(new Error('Transaction was deadlocked'), { number: 1205, code: 'EREQUEST' });
    const store = {
      kind: 'sqlserver',
      claim: async () => [],
      ack: async () => {
        throw lockVictim;
      },
    } as unknown as TransportStore;
    // Only the methods this test calls exist on the fake; the wrapper needs every port method to be a function.
    for (const m of ['ensureSchema', 'publish', 'publishToTopic', 'recordSubscriptions', 'topicSubscriptions', 'claimLimited', 'backOffQueue', 'release', 'releaseUnstarted', 'releaseLostClaim', 'renew', 'cancel', 'reschedule', 'setQueuePaused', 'queueState', 'deadLetter', 'pruneDedupKeys', 'pruneDeadLetterBatch', 'ackToHistory', 'findJob', 'searchHistory', 'pruneHistoryBatch', 'queueStats', 'queueNames', 'listWaiting', 'claimOutlook', 'listDeadLetters', 'requeueDeadLetter', 'deleteDeadLetter', 'hasMessage', 'now', 'close']) {
      (store as unknown as Record<string, unknown>)[m] = async () => undefined;
    }
    const wrapped = instrumentTransportStore(store, { record: telemetry.dependencies!, target: 'srv.database.windows.net/asyncresponse' });
    await wrapped.claim('worker', 16, 30_000);
    await expect(wrapped.ack([{ id: 'a', lockId: 'b' }])).rejects.toBe(lockVictim);
    await telemetry.flush();

    const deps = envelopes
      .filter((e) => e.name === 'Microsoft.ApplicationInsights.RemoteDependency')
      .map((e) => e.data.baseData as { name: string; type: string; target: string; data: string; success: boolean; properties: Record<string, string> });
    expect(deps.map((d) => [d.name, d.type, d.target, d.data, d.success])).toEqual([
      ['transport.claim', 'SQL', 'srv.database.windows.net/asyncresponse', 'claim', true],
      ['transport.ack', 'SQL', 'srv.database.windows.net/asyncresponse', 'ack', false],
    ]);
    expect(deps[1]!.properties.resultCode).toBe('1205');
    // outside an invocation each call is its own operation
    const dependencyEnvelopes = envelopes.filter((e) => e.name === 'Microsoft.ApplicationInsights.RemoteDependency');
    for (const e of dependencyEnvelopes) expect(e.tags['ai.operation.id']).toMatch(/^[0-9a-f]{32}$/);
  });

  it("a dependency inside an invocation is a child of the host's request (the distro's preInvocation hook)", async () => {
    expect(preInvocationHooks).toHaveLength(1);
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const hostSpanId = 'b7ad6b7169203331';
    const store = { kind: 'sqlserver' } as Record<string, unknown>;
    for (const m of ['ensureSchema', 'publish', 'publishToTopic', 'recordSubscriptions', 'topicSubscriptions', 'claim', 'claimLimited', 'backOffQueue', 'ack', 'release', 'releaseUnstarted', 'releaseLostClaim', 'renew', 'cancel', 'reschedule', 'setQueuePaused', 'queueState', 'deadLetter', 'pruneDedupKeys', 'pruneDeadLetterBatch', 'ackToHistory', 'findJob', 'searchHistory', 'pruneHistoryBatch', 'queueStats', 'queueNames', 'listWaiting', 'claimOutlook', 'listDeadLetters', 'requeueDeadLetter', 'deleteDeadLetter', 'hasMessage', 'now', 'close']) {
      store[m] = async () => [];
    }
    const wrapped = instrumentTransportStore(store as unknown as TransportStore, { record: telemetry.dependencies!, target: 'srv/db' });
    // What the worker does per invocation: preInvocation hooks, then the (possibly replaced) function callback.
    const pre = {
      hookData: {},
      appHookData: {},
      inputs: [],
      invocationContext: { invocationId: 'i-1', functionName: 'drain-worker', traceContext: { traceParent: `00-${traceId}-${hostSpanId}-01`, traceState: '' } },
      functionCallback: async () => wrapped.queueStats('worker', 'deadletter'),
    };
    for (const hook of preInvocationHooks) await hook.callback(pre as never);
    await pre.functionCallback();
    await telemetry.flush();
    const dep = envelopes.find((e) => e.name === 'Microsoft.ApplicationInsights.RemoteDependency' && e.data.baseData.name === 'transport.queueStats');
    expect(dep?.tags['ai.operation.id']).toBe(traceId);
    expect(dep?.tags['ai.operation.parentId']).toBe(hostSpanId);
  });

  it('sent everything to the fake endpoint through the in-memory client and opened no socket', () => {
    expect(requests.length).toBeGreaterThan(0);
    for (const url of requests) expect(url).toMatch(/^https?:\/\/127\.0\.0\.1:9\/v2\.1\/track$/);
    expect(connects).toEqual([]);
  });
});
