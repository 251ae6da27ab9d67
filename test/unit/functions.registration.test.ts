import { beforeAll, describe, expect, it } from 'vitest';
import { loadFunctionApp, type FunctionTable } from '../../local/functions-core';

// Pins what the app registers with the Functions library, as captured through our @azure/functions-core:
// a library change that breaks capture, or a route edit that breaks the API, fails here.
let table: FunctionTable;

beforeAll(async () => {
  process.env.PGLITE_DATA_DIR = 'memory://';
  table = await loadFunctionApp(() => import('../../functions/index'));
});

describe('function table', () => {
  it('registers every HTTP route with its methods and auth level', () => {
    const http = table.http.map((f) => [f.name, f.methods.join(','), f.route, f.authLevel]).sort();
    expect(http).toEqual(
      [
        ['delete-deadletter', 'DELETE', 'queues/{queue}/deadletters/{id}', 'function'],
        ['delete-waiter', 'DELETE', 'waiters/{registrationId}', 'function'],
        ['get-response', 'GET', 'responses', 'function'],
        ['post-response', 'POST', 'responses', 'function'],
        ['register-waiter', 'POST', 'waiters', 'function'],
        ['get-queue', 'GET', 'queues/{queue}', 'function'],
        ['health', 'GET', 'health', 'anonymous'],
        ['list-deadletters', 'GET', 'queues/{queue}/deadletters', 'function'],
        ['openapi', 'GET', 'openapi.json', 'function'],
        ['publish-message', 'POST', 'queues/{queue}/messages', 'function'],
        ['list-waiting', 'GET', 'queues/{queue}/messages', 'function'],
        ['requeue-deadletter', 'POST', 'queues/{queue}/deadletters/{id}/requeue', 'function'],
        ['list-queues', 'GET', 'queues', 'function'],
        ['publish-topic', 'POST', 'topics/{topic}/messages', 'function'],
        ['list-subscriptions', 'GET', 'topics/{topic}/subscriptions', 'function'],
        ['list-topics', 'GET', 'topics', 'function'],
        ['get-channel', 'GET', 'channel', 'function'],
        ['dashboard', 'GET', 'dashboard', 'anonymous'],
        ['dashboard-asset', 'GET', 'dashboard/{file}', 'anonymous'],
        ['put-schedule', 'PUT', 'schedules/{name}', 'function'],
        ['get-schedule', 'GET', 'schedules/{name}', 'function'],
        ['list-schedules', 'GET', 'schedules', 'function'],
        ['delete-schedule', 'DELETE', 'schedules/{name}', 'function'],
        ['pause-schedule', 'POST', 'schedules/{name}/pause', 'function'],
        ['resume-schedule', 'POST', 'schedules/{name}/resume', 'function'],
        ['start-flow', 'POST', 'flows/{name}', 'function'],
        ['get-flow', 'GET', 'flows/{name}/{id}', 'function'],
        ['control-flow', 'POST', 'flows/{name}/{id}/{action}', 'function'],
        ['list-flows', 'GET', 'flows', 'function'],
        ['cancel-message', 'DELETE', 'queues/{queue}/messages/{id}', 'function'],
        ['reschedule-message', 'POST', 'queues/{queue}/messages/{id}/reschedule', 'function'],
        ['pause-queue', 'POST', 'queues/{queue}/pause', 'function'],
        ['resume-queue', 'POST', 'queues/{queue}/resume', 'function'],
        ['get-job', 'GET', 'jobs/{id}', 'function'],
        ['list-jobs', 'GET', 'jobs', 'function'],
      ].sort(),
    );
  });

  it('every route but health and the dashboard page files (which hold no data) needs a function key in Azure', () => {
    const anonymous = ['health', 'dashboard', 'dashboard-asset'];
    for (const f of table.http) expect([f.name, f.authLevel]).toEqual([f.name, anonymous.includes(f.name) ? 'anonymous' : 'function']);
  });

  it('registers the timers on their default schedules, never run on startup', () => {
    const timers = table.timers.map((t) => [t.name, t.schedule, t.runOnStartup]).sort();
    expect(timers).toEqual([
      ['drain-callbacks', '*/10 * * * * *', false],
      ['drain-flows', '*/10 * * * * *', false],
      ['drain-responses', '*/10 * * * * *', false],
      ['drain-worker', '*/10 * * * * *', false],
      ['prune-deadletters', '0 * * * * *', false],
      ['queue-metrics', '0 * * * * *', false],
      ['sweep-channel', '*/5 * * * * *', false],
    ]);
  });

  it('registers an appTerminate hook that closes the pools', () => {
    expect(table.hooks.some((h) => h.name === 'appTerminate' && !h.disposed)).toBe(true);
  });
});
