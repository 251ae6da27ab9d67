/** Timings of the flows layer (durable-flows.md §2.3–2.5); every one has a default. */
export interface FlowOptions {
  /** The execution lease. Default 60 s. */
  leaseDurationMs: number;
  /** Renewed this often while an execution runs (shorter than the lease). Default 20 s. */
  leaseRenewIntervalMs: number;
  /** Idle expiry of a run's state, extended while it sleeps or waits. Default 14 days. */
  stateExpiryMs: number;
  /** A sleep (or its remainder) up to this long waits in process under the lease; a longer one parks. Default 5 s. */
  timerInProcessThresholdMs: number;
  /** An awaited step without timeoutMs times out after this long. Default 7 days. */
  defaultAwaitTimeoutMs: number;
  /** Progress messages are written at most this often. Default 1 s. */
  progressIntervalMs: number;
  /**
   * An awaited step waits this long in process, holding the lease, for a quick answer before it parks (0: park
   * at once). At most half the lease. Default 3 s.
   */
  awaitInProcessMs: number;
}

export const DEFAULT_FLOW_OPTIONS: Readonly<FlowOptions> = Object.freeze({
  leaseDurationMs: 60_000,
  leaseRenewIntervalMs: 20_000,
  stateExpiryMs: 14 * 86_400_000,
  timerInProcessThresholdMs: 5_000,
  defaultAwaitTimeoutMs: 7 * 86_400_000,
  progressIntervalMs: 1_000,
  awaitInProcessMs: 3_000,
});

/** The stores' ceiling for one duration (3650 days). */
export const MAX_TTL_MS = 3650 * 86_400_000;

export function flowOptionProblems(o: FlowOptions): string[] {
  const problems: string[] = [];
  for (const [k, v] of Object.entries(o)) if (!(Number.isFinite(v) && v >= 0)) problems.push(`flows.${k} must be a non-negative number of milliseconds`);
  if (o.leaseDurationMs < 1000) problems.push('flows.leaseDurationMs must be at least 1000');
  if (!(o.leaseRenewIntervalMs > 0 && o.leaseRenewIntervalMs < o.leaseDurationMs)) problems.push('flows.leaseRenewIntervalMs must be above 0 and below leaseDurationMs');
  if (o.awaitInProcessMs > o.leaseDurationMs / 2) problems.push('flows.awaitInProcessMs must be at most half of leaseDurationMs');
  if (o.stateExpiryMs <= o.defaultAwaitTimeoutMs) problems.push('flows.stateExpiryMs must exceed defaultAwaitTimeoutMs (a waiting run must outlive its wait)');
  return problems;
}
