// A storage queue that cannot be reached (nothing listens, the host does not resolve, the network drops): one
// line that says what to set instead of the SDK's error dump (a RestError prints its whole request). No Storage
// SDK import: the error is recognised by its Node network code.

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The one-line explanation when `err` says the storage queue cannot be reached; undefined for anything else. */
export function storageUnreachable(err: unknown, connection = 'AzureWebJobsStorage'): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !NETWORK_CODES.has(code)) return undefined;
  const what = ((err as Error).message || code).split('\n')[0];
  return (
    `the storage queue cannot be reached (${what}): set ${connection} to a storage account or an Azurite that is running ` +
    `(locally, leave it unset and \`npm start\` runs an embedded Azurite), or set DRAIN_TRIGGER=timer to drain by timers only`
  );
}
