// The app's storage account as the Functions host reaches it for a trigger's `connection` setting (here
// AzureWebJobsStorage): a connection string (Azurite locally), or identity-based in Azure
// (<conn>__queueServiceUri or <conn>__accountName, with <conn>__credential = managedidentity and <conn>__clientId
// for a user-assigned identity).
import { QueueServiceClient, type QueueClient } from '@azure/storage-queue';
import type { Env } from '../env';
import type { RequestQueue } from './sender';
import { STORAGE_CONNECTION } from './options';

export async function queueServiceClient(env: Env, connection = STORAGE_CONNECTION): Promise<QueueServiceClient> {
  const text = env[connection];
  if (text) return QueueServiceClient.fromConnectionString(text);
  const account = env[`${connection}__accountName`];
  const uri = env[`${connection}__queueServiceUri`] || (account ? `https://${account}.queue.core.windows.net` : undefined);
  if (!uri) throw new Error(`${connection} is not configured (a connection string, ${connection}__queueServiceUri or ${connection}__accountName)`);
  const { DefaultAzureCredential, ManagedIdentityCredential } = await import('@azure/identity');
  const clientId = env[`${connection}__clientId`];
  const credential = env[`${connection}__credential`]?.toLowerCase() === 'managedidentity'
    ? new ManagedIdentityCredential(clientId ? { clientId } : {})
    : new DefaultAzureCredential(clientId ? { managedIdentityClientId: clientId } : {});
  return new QueueServiceClient(uri, credential);
}

/** A day past the longest visibility delay, so a delayed request never expires before it surfaces. */
const TIME_TO_LIVE_SECONDS = 8 * 24 * 3600;

/** The drain-request queue, created on first use (Bicep creates it in Azure; Azurite starts empty). */
export function storageRequestQueue(client: QueueClient): RequestQueue {
  let created: Promise<unknown> | undefined;
  const ensure = (): Promise<unknown> =>
    (created ??= client.createIfNotExists().catch((err: unknown) => {
      created = undefined;
      throw err;
    }));
  return {
    async send(text, visibilitySeconds) {
      await ensure();
      await client.sendMessage(text, { visibilityTimeout: visibilitySeconds, messageTimeToLive: TIME_TO_LIVE_SECONDS });
    },
    async approximateCount() {
      await ensure();
      return (await client.getProperties()).approximateMessagesCount ?? 0;
    },
  };
}
