// The response channel's tables and timings (the engine's `channel` option; defaults: DEFAULT_CHANNEL in
// engine/options.ts, the same as the settings' defaults in shared/settings/channel.ts).

export interface ChannelConfig {
  recoveryTable: string;
  messageTable: string;
  subscriberTable: string;
  messageRetentionMs: number;
  deliveryConfirmationTimeoutMs: number;
  deliveryConfirmationPollMs: number;
  activePollIntervalMs: number;
  heartbeatIntervalMs: number;
  heartbeatTimeoutMs: number;
  pruneIntervalMs: number;
  recoveryStateExpiryMs: number;
  /** Unexpired callback registrations one correlation id may hold; POST /api/waiters beyond it is a 409. */
  maxRegistrationsPerCorrelationId: number;
  maxWaitSeconds: number;
  callbackAllowedHosts: string[];
  callbackSigningSecret?: string;
  /** Why callbacks are off although a secret is configured (an unresolved Key Vault reference); health shows it. */
  callbackSigningSecretProblem?: string;
  callbackTimeoutMs: number;
  correlationIdJsonPaths: string[];
  drainResponsesSchedule: string;
  drainCallbacksSchedule: string;
  sweepSchedule: string;
}
