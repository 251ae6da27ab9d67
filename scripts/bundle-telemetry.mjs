// Bundles the Application Insights SDK (applicationinsights → @azure/monitor-opentelemetry → OpenTelemetry) into
// one file, dist/vendor/applicationinsights.js (or the path given as the first argument), which
// shared/telemetry/setup.ts loads when telemetry is on. `npm run build` runs it.
//
// Why: even with the unused packages deferred (lazy-require.ts), the SDK is ~670 CommonJS modules, and resolving,
// reading and compiling each one separately was most of a cold start with telemetry on. One file loads in about
// two thirds of the time (docs/benchmarks.md: cold start). What stays outside the bundle is required at run time
// from node_modules as before: the packages setup.ts defers (they must stay separate modules to be deferred), the
// drivers the SDK instruments (the instrumentation patches them as they are required), and @azure/functions (the
// app and the SDK must share one copy: the SDK registers its preInvocation hook on it).
import { build } from 'esbuild';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EXTERNAL = [
  '@azure/functions',
  '@azure/identity',
  '@opentelemetry/configuration',
  '@opentelemetry/otlp-exporter-base',
  '@opentelemetry/otlp-grpc-exporter-base',
  '@opentelemetry/exporter-*',
  '@opentelemetry/propagator-b3',
  '@opentelemetry/propagator-jaeger',
  '@opentelemetry/instrumentation-mongodb',
  '@opentelemetry/instrumentation-mysql',
  '@opentelemetry/instrumentation-redis',
  '@opentelemetry/instrumentation-bunyan',
  '@opentelemetry/instrumentation-winston',
  '@opentelemetry/instrumentation-console',
  'pg',
  'pg-native',
  'mssql',
  'tedious',
];

const outfile = path.resolve(process.argv[2] ?? path.join(root, 'dist/vendor/applicationinsights.js'));
mkdirSync(path.dirname(outfile), { recursive: true });
await build({
  entryPoints: [path.join(root, 'node_modules/applicationinsights/out/src/index.js')],
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  outfile,
  external: EXTERNAL,
  legalComments: 'linked',
  logLevel: 'warning',
});
