// The Functions entry (package.json "main"): importing each file registers its function. The local host
// loads this same module, so routes and schedules have one source.
import { app } from '@azure/functions';
import { shutdownRuntime } from '../shared/runtime';

import './publish-message';
import './get-queue';
import './list-deadletters';
import './requeue-deadletter';
import './delete-deadletter';
import './health';
import './drain-worker';
import './prune-deadletters';

app.hook.appTerminate(async () => {
  await shutdownRuntime();
});
