// BENCH_ONLY=cold-start: what loading the Functions entry (dist/functions/index.js, package.json "main") costs a
// fresh process, with Application Insights off and on. Each sample is a new `node` process that requires the
// entry (outside the Functions host @azure/functions runs in test mode and registers nothing; startTelemetry runs
// as in Azure) and reports the time the require took, the resident memory after it and the modules loaded.
// Off and on alternate so both see the same machine load; the median of each is printed side by side.
//
// "On" uses a syntactically valid fake connection string pointing at 127.0.0.1 and the settings the Bicep gives
// the app (managed-identity authentication, the Functions environment variables that spare the resource
// detectors their IMDS probe); statsbeat is disabled. The child exits right after measuring, before any export,
// so nothing is sent anywhere.

import { execFile } from 'node:child_process';
import path from 'node:path';

export const COLD_START_SAMPLES = 5;
const FAKE_CONNECTION_STRING = 'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:9/';

const TELEMETRY_ON: Record<string, string> = {
  APPLICATIONINSIGHTS_CONNECTION_STRING: FAKE_CONNECTION_STRING,
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD;ClientId=00000000-0000-0000-0000-000000000001',
  APPLICATIONINSIGHTS_STATSBEAT_DISABLED: 'true',
  FUNCTIONS_VERSION: '4',
  WEBSITE_SITE_NAME: 'asyncresponse-bench',
};

const CHILD = `
const t0 = performance.now();
require(process.argv[1]);
const ms = performance.now() - t0;
const cpu = process.cpuUsage();
const mb = process.memoryUsage().rss / 1024 / 1024;
process.stdout.write(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, mb, modules: Object.keys(require.cache).length }));
process.exit(0);
`;

export interface LoadSample {
  /** the require of the entry, ms (wall clock) */
  ms: number;
  /** CPU time of the process up to then (node's own start-up included), ms: less sensitive to other load than `ms` */
  cpuMs: number;
  /** resident memory right after it, MB */
  mb: number;
  /** CommonJS modules in require.cache */
  modules: number;
}

function loadOnce(entry: string, telemetry: boolean): Promise<LoadSample> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(TELEMETRY_ON)) delete env[key];
  if (telemetry) Object.assign(env, TELEMETRY_ON);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', CHILD, entry], { env, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`cold-start child failed: ${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout) as LoadSample);
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

export interface ColdStartFigures {
  off: LoadSample[];
  on: LoadSample[];
}

export async function measureColdStart(entry = path.resolve(__dirname, '../functions/index.js'), samples = COLD_START_SAMPLES): Promise<ColdStartFigures> {
  const figures: ColdStartFigures = { off: [], on: [] };
  for (let i = 0; i < samples; i++) {
    figures.off.push(await loadOnce(entry, false));
    figures.on.push(await loadOnce(entry, true));
  }
  return figures;
}

/** Prints the medians through `record` (the bench's table). */
export async function benchColdStart(record: (what: string, value: string, note?: string) => void): Promise<void> {
  const { off, on } = await measureColdStart();
  const m = (xs: LoadSample[], k: keyof LoadSample) => median(xs.map((x) => x[k]));
  const line = (label: string, xs: LoadSample[]) =>
    record(label, `${m(xs, 'ms').toFixed(0)} ms`, `median of ${xs.length} processes (${xs.map((x) => x.ms.toFixed(0)).join(' ')}); CPU ${m(xs, 'cpuMs').toFixed(0)} ms, ${m(xs, 'mb').toFixed(0)} MB RSS, ${m(xs, 'modules')} modules`);
  line('load functions entry, telemetry off', off);
  line('load functions entry, Application Insights on', on);
  record('  on minus off', `+${(m(on, 'ms') - m(off, 'ms')).toFixed(0)} ms`, `CPU +${(m(on, 'cpuMs') - m(off, 'cpuMs')).toFixed(0)} ms, +${(m(on, 'mb') - m(off, 'mb')).toFixed(0)} MB RSS`);
}
