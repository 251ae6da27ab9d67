// The response channel's settings: its tables, the waiters' timings, callbacks (hosts, signing secret, timeout)
// and where response ingress finds the correlation id.

import { DEFAULT_CORRELATION_ID_JSON_PATHS } from '../channel/correlation-extractor';
import type { ChannelConfig } from '../channel/options';
import { validateIdentifier, type Dialect } from '../sql/identifiers';
import type { Readers } from './env';

export function readChannel({ str, num }: Readers, problems: string[], dialect: Dialect): ChannelConfig {
  const tables = {
    recoveryTable: str('RECOVERY_STATE_TABLE') ?? 'asyncresponse_recovery_state',
    messageTable: str('CHANNEL_MESSAGE_TABLE') ?? 'asyncresponse_channel_messages',
    subscriberTable: str('CHANNEL_SUBSCRIBER_TABLE') ?? 'asyncresponse_channel_subscribers',
  };
  for (const [what, value] of Object.entries(tables)) {
    try {
      validateIdentifier(value, what, dialect);
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  const heartbeatIntervalMs = num('SUBSCRIBER_HEARTBEAT_INTERVAL_SECONDS', 10, { min: 0.01, max: 3600 }) * 1000;
  const heartbeatTimeoutMs = num('SUBSCRIBER_HEARTBEAT_TIMEOUT_SECONDS', 30, { min: 0.02, max: 7200 }) * 1000;
  if (heartbeatIntervalMs >= heartbeatTimeoutMs) problems.push('SUBSCRIBER_HEARTBEAT_INTERVAL_SECONDS must be lower than SUBSCRIBER_HEARTBEAT_TIMEOUT_SECONDS');
  const hosts = (str('CALLBACK_ALLOWED_HOSTS') ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  for (const h of hosts) if (!/^(\*\.)?[a-z0-9.-]+(:\d{1,5})?$/.test(h)) problems.push(`CALLBACK_ALLOWED_HOSTS entry '${h}' is not a host, host:port or *.domain`);
  const paths = (str('CORRELATION_ID_JSON_PATHS') ?? DEFAULT_CORRELATION_ID_JSON_PATHS.join(',')).split(',').map((p) => p.trim()).filter((p) => p !== '');
  let secret = str('CALLBACK_SIGNING_SECRET');
  let secretProblem: string | undefined;
  if (secret?.startsWith('@Microsoft.KeyVault(')) {
    // Not fatal: the platform passes the reference text through until the identity's access to the vault has taken
    // effect (RBAC can take minutes after a first deploy). Everything but callbacks works meanwhile.
    secret = undefined;
    secretProblem =
      'CALLBACK_SIGNING_SECRET is an unresolved Key Vault reference (the app identity needs "Key Vault Secrets User" on the vault; ' +
      'after granting it, restart the app): callbacks are off until it resolves';
  } else if (secret !== undefined && secret.length < 16) problems.push('CALLBACK_SIGNING_SECRET must be at least 16 characters');
  return {
    ...tables,
    messageRetentionMs: num('MESSAGE_RETENTION_SECONDS', 3600, { min: 1, max: 3650 * 86400 }) * 1000,
    deliveryConfirmationTimeoutMs: num('DELIVERY_CONFIRMATION_TIMEOUT_MS', 5000, { min: 1, max: 600_000 }),
    deliveryConfirmationPollMs: num('DELIVERY_CONFIRMATION_POLL_MS', 50, { min: 1, max: 60_000 }),
    activePollIntervalMs: num('ACTIVE_POLL_INTERVAL_MS', 250, { min: 1, max: 60_000 }),
    heartbeatIntervalMs,
    heartbeatTimeoutMs,
    pruneIntervalMs: num('PRUNE_INTERVAL_SECONDS', 30, { max: 86400 }) * 1000,
    recoveryStateExpiryMs: num('RECOVERY_STATE_EXPIRY_SECONDS', 604800, { min: 1, max: 3650 * 86400 }) * 1000,
    maxRegistrationsPerCorrelationId: num('MAX_REGISTRATIONS_PER_CORRELATION_ID', 32, { min: 1, max: 100_000, integer: true }),
    maxWaitSeconds: num('MAX_WAIT_SECONDS', 120, { min: 0, max: 220 }),
    callbackAllowedHosts: hosts,
    callbackSigningSecret: secret,
    ...(secretProblem ? { callbackSigningSecretProblem: secretProblem } : {}),
    callbackTimeoutMs: num('CALLBACK_TIMEOUT_SECONDS', 30, { min: 1, max: 600 }) * 1000,
    correlationIdJsonPaths: paths,
    drainResponsesSchedule: str('DRAIN_RESPONSES_SCHEDULE') ?? '*/10 * * * * *',
    drainCallbacksSchedule: str('DRAIN_CALLBACKS_SCHEDULE') ?? '*/10 * * * * *',
    sweepSchedule: str('SWEEP_CHANNEL_SCHEDULE') ?? '*/5 * * * * *',
  };
}
