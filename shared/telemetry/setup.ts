// Application Insights for the app's own telemetry: custom metrics (metrics.ts) and SQL dependencies
// (dependencies.ts). The Functions host already records every invocation (`requests`), everything logged through
// the InvocationContext (`traces`) and invocation failures (`exceptions`); this adds only what the host cannot see.
//
// - Started only when APPLICATIONINSIGHTS_CONNECTION_STRING is set (Azure sets it; locally it is usually absent).
//   Without it nothing is loaded (applicationinsights and the OpenTelemetry SDK are required lazily: no start-up
//   cost) and the app gets noopMetrics. Starting is idempotent; functions/index.ts starts it when the app loads,
//   so the distro's preInvocation hook (which binds each invocation's trace context) is in place before the first
//   invocation and the `pg` driver is loaded (lazily, by openStores) after the distro's pg instrumentation.
// - Logs: the engine logs through the Logger the functions pass in, which is the InvocationContext, so log lines
//   reach `traces` through the host with the invocation's operation id. The SDK's own console / winston / bunyan
//   log collection stays off, so nothing is logged twice.
// - Sampling: metrics are never sampled (trackMetric records on an OpenTelemetry histogram; the exporter aggregates
//   per minute and writes sampleRate 100). Spans (our SQL dependencies, Azure SDK and http calls) go through the
//   distro's rate-limited sampler, TRACES_PER_SECOND below; its decision hashes the trace id, i.e. the invocation's
//   operation id, so an invocation keeps all its dependencies or none, and kept ones carry their sample rate
//   (itemCount) so counts stay right. OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG override it (the distro
//   reads them). The host samples its own telemetry separately (host.json).
// - Authentication: when APPLICATIONINSIGHTS_AUTHENTICATION_STRING is `Authorization=AAD;ClientId=<id>` (what
//   the Bicep sets for the host), the exporter authenticates with that managed identity too, so ingestion works
//   with local authentication disabled on the component. The SDK itself does not read that setting.
// - Off as well: live metrics and performance counters (the host reports both), automatic exception collection
//   (its process-wide unhandledRejection listener would change how the worker treats unhandled rejections), and
//   the instrumentations of drivers the app does not use (INSTRUMENTATIONS).
// - Cold start: the SDK loads synchronously with the app, so every cold start pays for it. As published it
//   loads ~2,900 modules (on Azure 1.0–2.5 s and ~118 MB RSS, against 36–120 ms without it):
//   @opentelemetry/sdk-node requires every OTLP / Prometheus / Zipkin exporter, propagator and its YAML
//   configuration loader, and three OpenTelemetry release trains are installed side by side. Two levers, neither
//   changing what is sent: the packages the SDK requires but never runs with these options are deferred to their
//   first use (isUnusedSdkPackage, lazy-require.ts; the managed identity credential likewise), and package.json
//   `overrides` keep one copy of each stable (2.x) OpenTelemetry package. That leaves ~670 modules of the SDK, which
//   the build bundles into one file (scripts/bundle-telemetry.mjs, loadSdk below);
//   `BENCH_ONLY=cold-start npm run bench` measures it (docs/benchmarks.md). Starting the SDK later (after the
//   first invocation) is not an option: the preInvocation hook must be registered and the pg instrumentation in
//   place before the first invocation, or its dependencies lose their parent or are not recorded at all.

import { existsSync } from 'node:fs';
import path from 'node:path';
import type { TokenCredential } from '@azure/identity';
import type { AzureMonitorOpenTelemetryOptions } from 'applicationinsights';
import type { Env } from '../env';
import { appInsightsDependencies, type DependencySink } from './dependencies';
import { requireDeferring } from './lazy-require';
import { appInsightsMetrics, noopMetrics, type Metrics } from './metrics';

/** The distro's default rate, written down so the choice is visible: at most about 5 sampled traces a second. */
export const TRACES_PER_SECOND = 5;

/**
 * The distro's instrumentations. On: http (outgoing calls such as callbacks, and Azure SDK HTTP), the Azure SDK,
 * and PostgreSQL (`pg`, the postgres store's dependencies). Off: drivers the app does not use (MongoDB, MySQL,
 * Redis); console / bunyan / winston are switched off by setAutoCollectConsole(false, false) below.
 */
export const INSTRUMENTATIONS: NonNullable<AzureMonitorOpenTelemetryOptions['instrumentationOptions']> = {
  http: { enabled: true },
  azureSdk: { enabled: true },
  postgreSql: { enabled: true },
  mongoDb: { enabled: false },
  mySql: { enabled: false },
  redis: { enabled: false },
  redis4: { enabled: false },
};

/**
 * What the SDK requires at load but never runs with our options: @opentelemetry/sdk-node's OTLP (http, grpc,
 * proto), Prometheus and Zipkin exporters, B3 and Jaeger propagators and its YAML configuration loader; the
 * applicationinsights shim's OTLP exporters (only used with otlp*ExporterConfig enabled); the instrumentations
 * switched off above; @azure/identity (the distro needs it only for live metrics). Each is still loaded on first
 * use, so an OTEL_* setting that selects one of them keeps working.
 */
export function isUnusedSdkPackage(request: string): boolean {
  return UNUSED_SDK_PACKAGE.test(request);
}
const UNUSED_SDK_PACKAGE =
  /^(@opentelemetry\/(exporter-[a-z-]+|otlp-exporter-base|otlp-grpc-exporter-base|propagator-(b3|jaeger)|configuration|instrumentation-(mongodb|mysql|redis|bunyan|winston|console))|@azure\/identity)$/;

export interface Telemetry {
  readonly enabled: boolean;
  readonly metrics: Metrics;
  /** Where store decorators record SQL dependencies; undefined when telemetry is off (nothing is wrapped). */
  readonly dependencies: DependencySink | undefined;
  /** Exports what is buffered (metrics are otherwise exported once a minute). Never throws. */
  flush(): Promise<void>;
  /** Flushes and stops the SDK; a later startTelemetry starts it again (tests). Never throws. */
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  /**
   * Merged over the options below (azureMonitorExporterOptions key by key). Tests pass an in-memory `httpClient`,
   * `disableOfflineStorage` and full sampling; the app passes nothing.
   */
  azureMonitor?: AzureMonitorOpenTelemetryOptions;
  /** The file to load the SDK from (tests: a bundle they built); default the build's bundle, else the package. */
  sdkPath?: string;
}

const off: Telemetry = {
  enabled: false,
  metrics: noopMetrics,
  dependencies: undefined,
  flush: async () => {},
  shutdown: async () => {},
};

let current: Telemetry | undefined;

/**
 * The SDK as one bundled file when the build made it (dist/vendor/applicationinsights.js, see
 * scripts/bundle-telemetry.mjs: about two thirds of the load time of ~670 separate modules), else the package.
 */
export function loadSdk(from: string | undefined = sdkBundlePath()): typeof import('applicationinsights') {
  return (from ? require(from) : require('applicationinsights')) as typeof import('applicationinsights');
}

/** The build's bundle next to the compiled code (dist/shared/telemetry → dist/vendor), when it exists. */
export function sdkBundlePath(): string | undefined {
  const bundled = path.join(__dirname, '../../vendor/applicationinsights.js');
  return existsSync(bundled) ? bundled : undefined;
}

/** Starts the Application Insights SDK once when APPLICATIONINSIGHTS_CONNECTION_STRING is set; otherwise telemetry is off. */
export function startTelemetry(env: Env = process.env, options: TelemetryOptions = {}): Telemetry {
  if (current) return current;
  const connectionString = env.APPLICATIONINSIGHTS_CONNECTION_STRING?.trim();
  if (!connectionString) return off;
  try {
    current = start(connectionString, env, options);
  } catch (err) {
    console.warn('Application Insights could not start; custom metrics and SQL dependencies are off', err);
    return off;
  }
  return current;
}

function start(connectionString: string, env: Env, options: TelemetryOptions): Telemetry {
  // Required here, not at the top: without a connection string the SDK is never loaded. The packages the SDK
  // requires but (with the options below) never uses are deferred until something uses them.
  const appInsights = requireDeferring(() => loadSdk(options.sdkPath ?? sdkBundlePath()), isUnusedSdkPackage);
  const credential = aadClientId(env.APPLICATIONINSIGHTS_AUTHENTICATION_STRING);
  const { azureMonitorExporterOptions: exporterOverrides, ...overrides } = options.azureMonitor ?? {};
  const azureMonitor: AzureMonitorOpenTelemetryOptions = {
    tracesPerSecond: TRACES_PER_SECOND,
    enableLiveMetrics: false,
    enablePerformanceCounters: false,
    instrumentationOptions: structuredClone(INSTRUMENTATIONS), // a copy: the shim adjusts what it is given
    ...overrides,
    azureMonitorExporterOptions: {
      connectionString,
      ...(credential ? { credential: managedIdentityCredential(credential.clientId) } : {}),
      ...exporterOverrides,
    },
  };
  appInsights
    .setup(connectionString)
    .setAutoCollectConsole(false, false)
    .setAutoCollectExceptions(false)
    .setAutoCollectPerformance(false, false)
    .setSendLiveMetrics(false)
    .setAzureMonitorOptions(azureMonitor)
    .start();
  const client = appInsights.defaultClient;
  const telemetry: Telemetry = {
    enabled: true,
    metrics: appInsightsMetrics(client),
    dependencies: appInsightsDependencies(client),
    flush: () => client.flush().catch(() => undefined),
    shutdown: async () => {
      if (current === telemetry) current = undefined;
      await client.flush().catch(() => undefined);
      await client.shutdown().catch(() => undefined);
      appInsights.dispose(); // forgets defaultClient, so a later setup() starts afresh
    },
  };
  return telemetry;
}

/**
 * `Authorization=AAD;ClientId=<id>` → { clientId: '<id>' }; `Authorization=AAD` → {} (system-assigned identity);
 * anything else → undefined (the connection string's instrumentation key alone authenticates).
 */
export function aadClientId(authenticationString: string | undefined): { clientId?: string } | undefined {
  if (!authenticationString?.trim()) return undefined;
  const fields = new Map<string, string>();
  for (const pair of authenticationString.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0) fields.set(pair.slice(0, eq).trim().toLowerCase(), pair.slice(eq + 1).trim());
  }
  if (fields.get('authorization')?.toUpperCase() !== 'AAD') return undefined;
  const clientId = fields.get('clientid');
  return clientId ? { clientId } : {};
}

/**
 * The managed identity the exporter authenticates with. @azure/identity (with MSAL) is loaded on the first token
 * request, i.e. the first export, not while the app loads: the exporter only keeps the credential until then.
 */
export function managedIdentityCredential(clientId: string | undefined): TokenCredential {
  let credential: TokenCredential | undefined;
  const real = () => {
    if (!credential) {
      const { ManagedIdentityCredential } = require('@azure/identity') as typeof import('@azure/identity');
      credential = clientId ? new ManagedIdentityCredential({ clientId }) : new ManagedIdentityCredential();
    }
    return credential;
  };
  return { getToken: (scopes, getTokenOptions) => real().getToken(scopes, getTokenOptions) };
}
