// The Functions entry (package.json "main"): importing each file registers its function. The local host
// loads this same module, so routes and schedules have one source.
import { app } from '@azure/functions';
import { appConfig, getRuntime, shutdownRuntime } from '../shared/runtime';
import { startTelemetry } from '../shared/telemetry/setup';

import './publish-message';
import './get-queue';
import './list-deadletters';
import './requeue-deadletter';
import './delete-deadletter';
import './health';
import './drain-worker';
import './prune-deadletters';
import './post-response';
import './get-response';
import './register-waiter';
import './delete-waiter';
import './drain-responses';
import './drain-callbacks';
import './drain-requested';
import './sweep-channel';
import './queue-metrics';
import './openapi';
import './list-queues';
import './publish-topic';
import './list-subscriptions';
import './get-channel';
import './dashboard';
import './dashboard-asset';
import './put-schedule';
import './get-schedule';
import './list-schedules';
import './delete-schedule';
import './pause-schedule';
import './resume-schedule';
import './start-flow';
import './get-flow';
import './control-flow';
import './list-flows';
import './drain-flows';
import './cancel-message';
import './reschedule-message';
import './pause-queue';
import './list-waiting';
import './get-job';
import './list-jobs';

// Application Insights (only with APPLICATIONINSIGHTS_CONNECTION_STRING) starts before the first invocation, so
// its preInvocation hook gives every invocation's dependencies the host's operation id (shared/telemetry/setup.ts).
startTelemetry(process.env);

// Queue mode: an instance that starts opens its runtime at once, which announces the work already due (rows
// published from SQL or while scaled to zero, leases a crashed instance left; shared/runtime.ts). Not awaited: the
// host starts serving meanwhile, and a runtime that cannot open yet is opened again by the first invocation.
app.hook.appStart(() => {
  if (appConfig().drainRequests.trigger === 'queue') getRuntime().catch((err: unknown) => console.warn('opening the runtime at start-up failed; the first invocation tries again', err));
});

app.hook.appTerminate(async () => {
  await shutdownRuntime();
});
