// Telemetry is off without APPLICATIONINSIGHTS_CONNECTION_STRING: nothing starts, nothing is tracked.

import * as appInsights from 'applicationinsights';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { noopMetrics } from '../../shared/telemetry/metrics';
import { aadClientId, startTelemetry } from '../../shared/telemetry/setup';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('startTelemetry without a connection string', () => {
  it.each([{}, { APPLICATIONINSIGHTS_CONNECTION_STRING: '' }, { APPLICATIONINSIGHTS_CONNECTION_STRING: '   ' }])('is off for %j', (env) => {
    const trackMetric = vi.spyOn(appInsights.TelemetryClient.prototype, 'trackMetric');
    const trackDependency = vi.spyOn(appInsights.TelemetryClient.prototype, 'trackDependency');
    const t = startTelemetry(env);
    expect(t.enabled).toBe(false);
    expect(t.metrics).toBe(noopMetrics);
    expect(t.metrics.enabled).toBe(false);
    expect(t.dependencies).toBeUndefined();

    t.metrics.jobsPublished('worker', 3);
    t.metrics.drainFinished({ queue: 'worker', claimed: 1, completed: 1, retried: 0, deadLettered: 0, dropped: 0, cancelled: 0, released: 0, releaseFailures: 0, lostClaimsRecovered: 0, ackFailures: 0, claimFailures: 0, durationMs: 5, stoppedBy: 'idle' });
    t.metrics.queueDepth({ queue: 'worker', ready: 1, delayed: 0, leased: 0, deadLettered: 0, oldestReadyAgeSeconds: 1 });
    t.metrics.sweepFinished({ overdue: 0, routed: 0, failed: 0, cutShort: false, pruned: null, durationMs: 1 });
    t.metrics.pruned('deadletters', 5);
    t.metrics.responsePublished('stored', 'http');

    expect(trackMetric).not.toHaveBeenCalled();
    expect(trackDependency).not.toHaveBeenCalled();
    expect(appInsights.defaultClient, 'setup() never ran').toBeFalsy();
  });

  it('flush and shutdown of the off telemetry do nothing', async () => {
    const t = startTelemetry({});
    await expect(t.flush()).resolves.toBeUndefined();
    await expect(t.shutdown()).resolves.toBeUndefined();
  });
});

describe('APPLICATIONINSIGHTS_AUTHENTICATION_STRING', () => {
  it('names the managed identity the exporter authenticates with', () => {
    expect(aadClientId('Authorization=AAD;ClientId=0f5e1a2b-0000-4000-8000-000000000001')).toEqual({ clientId: '0f5e1a2b-0000-4000-8000-000000000001' });
    expect(aadClientId('authorization=aad; clientid=abc ')).toEqual({ clientId: 'abc' });
    expect(aadClientId('Authorization=AAD')).toEqual({}); // system-assigned identity
  });

  it('is ignored when absent or not AAD', () => {
    expect(aadClientId(undefined)).toBeUndefined();
    expect(aadClientId('')).toBeUndefined();
    expect(aadClientId('Authorization=Other;ClientId=x')).toBeUndefined();
    expect(aadClientId('garbage')).toBeUndefined();
  });
});
