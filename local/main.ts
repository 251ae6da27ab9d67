// `npm start`: the local Functions host for dist/functions/index.js (built by tsc next to dist/local).
import { appendFileSync } from 'node:fs';
import * as path from 'node:path';
import { storageConfigured } from '../shared/settings/drain-requests';
import { startAzurite, type Azurite } from './azurite';
import { formatFunctionList } from './banner';
import { loadFunctionApp } from './functions-core';
import { startLocalHost, type LocalHost } from './host';
import { loadLocalSettings, readQueueSettings, readRoutePrefix } from './settings';

async function main(): Promise<void> {
  // The signal handlers come first: a SIGTERM while Azurite or the app is still starting must not kill this process
  // by the default action, which would leave the Azurite child running (process 'exit' handlers do not run then).
  let host: LocalHost | undefined;
  let azurite: Azurite | undefined;
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      console.log(`${signal} again: exiting now.`);
      process.exit(1);
    }
    stopping = true;
    console.log(`${signal}: stopping (waiting for running invocations; press Ctrl+C again to force).`);
    Promise.resolve(host?.close())
      .then(() => azurite?.stop())
      .then(
        () => {
          console.log(`${signal}: stopped.`);
          process.exit(0);
        },
        (err: unknown) => {
          console.error(err);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));

  const cwd = process.cwd();
  // Settings first: the functions entry may read its configuration while it loads.
  const settings = loadLocalSettings(cwd);
  // Drain requests need a storage queue: without AzureWebJobsStorage the embedded Azurite is it (before the
  // functions load: their registration reads the settings).
  if ((process.env.DRAIN_TRIGGER ?? '').toLowerCase() !== 'timer' && !storageConfigured(process.env) && process.env.LOCAL_AZURITE !== 'false') {
    const location = process.env.LOCAL_AZURITE_LOCATION || path.join(cwd, '.data', 'azurite');
    azurite = await startAzurite({ location, port: Number(process.env.LOCAL_AZURITE_PORT ?? 0) });
    if (stopping) return void (await azurite.stop()); // stop() ran while it started, before it knew of it
    process.env.AzureWebJobsStorage = azurite.connectionString;
    console.log(`Azurite (storage queues) on ${azurite.queueEndpoint}, data ${location === 'memory' ? 'in memory' : `in ${location}`}.`);
  }
  const invocationLog = process.env.LOCAL_INVOCATION_LOG;
  const table = await loadFunctionApp(path.join(__dirname, '..', 'functions', 'index'));
  const prefix = readRoutePrefix(cwd);
  const port = Number(process.env.PORT ?? settings.port ?? 7071);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${process.env.PORT}".`);
  if (stopping) return;
  host = await startLocalHost({
    table,
    port,
    host: process.env.LOCAL_HOST_ADDRESS ?? '127.0.0.1',
    prefix,
    functionKey: process.env.LOCAL_FUNCTION_KEY || undefined,
    timers: process.env.LOCAL_TIMERS !== 'false',
    // timers fire every few seconds: their Executing / Executed pairs only when asked (a failed one always shows)
    timerLog: process.env.LOCAL_TIMER_LOG === 'true',
    queueSettings: readQueueSettings(cwd),
    // one JSON line per invocation (name, start, end, ok): bench/idle-cost.ts sums the billed periods from it
    onInvocation: invocationLog ? (r) => appendFileSync(invocationLog, `${JSON.stringify(r)}\n`) : undefined,
  });
  console.log(`\n${formatFunctionList(table, `http://localhost:${host.port}`, prefix)}\n`);
  if (settings.applied.length > 0) console.log(`Loaded ${settings.applied.length} setting(s) from local.settings.json.`);
  console.log(`Host listening on ${host.url}. Press Ctrl+C to stop.`);
}

main().catch((err: unknown) => {
  // a bad setting is the user's to fix: its message lists every problem, and a stack trace would only bury it
  const settingProblem = err instanceof Error && err.name === 'ConfigError';
  console.error(err instanceof Error ? (settingProblem ? err.message : (err.stack ?? err.message)) : err);
  process.exit(1);
});
