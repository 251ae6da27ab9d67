// The build bundles the Application Insights SDK into one file (scripts/bundle-telemetry.mjs) and setup.ts loads
// it: this builds that bundle into a temporary folder and starts telemetry from it, with an in-memory HTTP client
// in place of the exporters' transport (as telemetry.app-insights.test.ts does with the package). The bundle must
// do what the package does: patch the `pg` driver and http (they stay outside the bundle, so the SDK's require
// hooks patch the app's own copies), export our custom metrics and the driver's dependencies, and still defer the
// packages setup.ts defers (they stay separate modules).
import type { AzureMonitorOpenTelemetryOptions } from 'applicationinsights';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC } from '../../shared/telemetry/metric-names';
import { startTelemetry, type Telemetry } from '../../shared/telemetry/setup';

const root = path.resolve(__dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'ar-sdk-bundle-'));
const bundle = path.join(dir, 'applicationinsights.js');
const ENV: Record<string, string> = { APPLICATIONINSIGHTS_STATSBEAT_DISABLED: 'true', FUNCTIONS_VERSION: '4', WEBSITE_SITE_NAME: 'asyncresponse-test' };
const saved: Record<string, string | undefined> = {};

interface Envelope {
  name: string;
  data: { baseData: { name?: string; metrics?: Array<{ name: string; value: number }> } };
}
const envelopes: Envelope[] = [];
type HttpClient = NonNullable<NonNullable<AzureMonitorOpenTelemetryOptions['azureMonitorExporterOptions']>['httpClient']>;
const httpClient: HttpClient = {
  async sendRequest(request) {
    const bytes = Buffer.from(request.body as Uint8Array);
    const text = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
    const parsed = JSON.parse(text) as Envelope | Envelope[];
    envelopes.push(...(Array.isArray(parsed) ? parsed : [parsed]));
    return { status: 200, headers: request.headers, request, bodyAsText: JSON.stringify({ itemsReceived: 1, itemsAccepted: 1, errors: [] }) };
  },
};

let telemetry: Telemetry;
const req = createRequire(__filename);

beforeAll(() => {
  execFileSync(process.execPath, [path.join(root, 'scripts/bundle-telemetry.mjs'), bundle], { cwd: root, stdio: 'pipe' });
  for (const [k, v] of Object.entries(ENV)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  telemetry = startTelemetry(
    { APPLICATIONINSIGHTS_CONNECTION_STRING: 'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:9/' },
    {
      sdkPath: bundle,
      azureMonitor: {
        tracesPerSecond: 0,
        samplingRatio: 1,
        enableStandardMetrics: false,
        azureMonitorExporterOptions: { httpClient, disableOfflineStorage: true },
      },
    },
  );
}, 60_000);

afterAll(async () => {
  await telemetry?.shutdown();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('the bundled Application Insights SDK (npm run build → dist/vendor/applicationinsights.js)', () => {
  it('is one file: the SDK packages are not loaded from node_modules, and the deferred ones are not loaded at all', () => {
    expect(existsSync(bundle)).toBe(true);
    expect(telemetry.enabled).toBe(true);
    const loaded = Object.keys(req.cache);
    expect(loaded).toContain(bundle);
    expect(loaded.filter((f) => /node_modules\/(applicationinsights|@azure\/monitor-opentelemetry|@opentelemetry\/sdk-)/.test(f))).toEqual([]);
    expect(loaded.filter((f) => /node_modules\/(@opentelemetry\/(exporter-|otlp-|propagator-|configuration)|@azure\/identity)/.test(f))).toEqual([]);
  });

  it('patches the pg driver and http, and exports custom metrics and SQL dependencies', async () => {
    const pg = req('pg') as typeof import('pg') & { Client: { prototype: { query: { __wrapped?: boolean } } } };
    expect(pg.Client.prototype.query.__wrapped, 'pg Client.query patched by the bundled instrumentation').toBe(true);
    expect((req('http') as { request: { __wrapped?: boolean } }).request.__wrapped).toBe(true);
    telemetry.metrics.jobsPublished('worker', 3);
    const url = process.env.PG_URL;
    if (url) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('SELECT 1');
      await c.end();
    } else {
      console.warn('[telemetry bundle] the pg dependency half is skipped: PG_URL is not set');
    }
    await telemetry.flush();
    const metrics = envelopes.flatMap((e) => e.data.baseData.metrics ?? []);
    expect(metrics.find((m) => m.name === METRIC.jobsPublished)?.value).toBe(3);
    if (url) {
      const dependencies = envelopes.filter((e) => e.name === 'Microsoft.ApplicationInsights.RemoteDependency').map((e) => e.data.baseData.name);
      expect(dependencies.some((n) => n?.startsWith('pg.query'))).toBe(true);
    }
  });
});
