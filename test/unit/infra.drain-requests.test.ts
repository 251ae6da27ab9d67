// The Bicep behind DRAIN_TRIGGER=queue: the drain-request queue and its poison queue on the host storage account,
// Storage Queue Data Contributor for the app identity (it sends requests and its trigger reads them), and the app
// settings that name the queue, read from the Bicep text.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const infra = (f: string) => readFileSync(join(__dirname, '..', '..', 'infra', f), 'utf8');

describe('infra: drain requests', () => {
  const storage = infra('modules/storage.bicep');
  const app = infra('modules/function-app.bicep');
  const main = infra('main.bicep');

  it('creates the drain-request queue and its poison queue', () => {
    expect(storage).toMatch(/resource queueService 'Microsoft\.Storage\/storageAccounts\/queueServices@[\d-]+' = \{\s*parent: storage\s*name: 'default'/);
    expect(storage).toMatch(/queueServices\/queues@[\d-]+' = \{\s*parent: queueService\s*name: drainRequestQueue\s*\}/);
    expect(storage).toMatch(/queueServices\/queues@[\d-]+' = \{\s*parent: queueService\s*name: '\$\{drainRequestQueue\}-poison'\s*\}/);
    expect(storage).toMatch(/param drainRequestQueue string = 'asyncresponse-drain'/);
  });

  it('grants the app identity Storage Queue Data Contributor on the account', () => {
    expect(storage).toContain("var storageQueueDataContributorRoleId = '974c5e8b-45b9-4653-ba55-5f855dd0fb88'");
    expect(storage).toMatch(/resource queueDataContributor[^}]*scope: storage[^}]*roleDefinitions', storageQueueDataContributorRoleId\)\s*principalId: principalId/);
  });

  it('runs the app in queue mode on that queue', () => {
    expect(app).toMatch(/DRAIN_TRIGGER: 'queue'/);
    expect(app).toMatch(/DRAIN_REQUEST_QUEUE: drainRequestQueue/);
    expect(main).toMatch(/drainRequestQueue: storage\.outputs\.drainRequestQueue/);
  });
});
