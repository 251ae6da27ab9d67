// `npm start`: the local Functions host for dist/functions/index.js (built by tsc next to dist/local).
import * as path from 'node:path';
import { formatFunctionList } from './banner';
import { loadFunctionApp } from './functions-core';
import { startLocalHost } from './host';
import { loadLocalSettings, readRoutePrefix } from './settings';

async function main(): Promise<void> {
  const cwd = process.cwd();
  // Settings first: the functions entry may read its configuration while it loads.
  const settings = loadLocalSettings(cwd);
  const table = await loadFunctionApp(path.join(__dirname, '..', 'functions', 'index'));
  const prefix = readRoutePrefix(cwd);
  const port = Number(process.env.PORT ?? settings.port ?? 7071);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${process.env.PORT}".`);
  const host = await startLocalHost({
    table,
    port,
    host: process.env.LOCAL_HOST_ADDRESS ?? '127.0.0.1',
    prefix,
    functionKey: process.env.LOCAL_FUNCTION_KEY || undefined,
    timers: process.env.LOCAL_TIMERS !== 'false',
  });
  console.log(`\n${formatFunctionList(table, `http://localhost:${host.port}`, prefix)}\n`);
  if (settings.applied.length > 0) console.log(`Loaded ${settings.applied.length} setting(s) from local.settings.json.`);
  console.log(`Host listening on ${host.url}. Press Ctrl+C to stop.`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      console.log(`${signal} again: exiting now.`);
      process.exit(1);
    }
    stopping = true;
    console.log(`${signal}: stopping (waiting for running invocations; press Ctrl+C again to force).`);
    host.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
