// The mapping from events to metric names, values and dimensions (shared by every implementation), and the one
// list of names against the operator-facing lists (observability.bicep's header, docs/azure.md's table).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { METRIC, METRIC_NAMES, METRICS_OUTSIDE_WORKBOOK } from '../../shared/telemetry/metric-names';
import { appInsightsMetrics, MemoryMetrics, metricsOver } from '../../shared/telemetry/metrics';
import { listedMetricNames } from '../support/bicep';
import { drainReport as report } from '../support/drain-report';

describe('metrics mapping', () => {
  it('drainFinished: every count with its dimensions; failed = retried + dead-lettered; redelivered = retried + released', () => {
    const m = new MemoryMetrics();
    m.drainFinished(report({ claimed: 10, completed: 5, retried: 2, deadLettered: 1, released: 2, durationMs: 7999, stoppedBy: 'budget' }));
    expect(m.records).toEqual([
      { name: 'asyncresponse.jobs.claimed', value: 10, properties: { queue: 'worker' } },
      { name: 'asyncresponse.jobs.completed', value: 5, properties: { queue: 'worker' } },
      { name: 'asyncresponse.jobs.failed', value: 2, properties: { queue: 'worker', outcome: 'redelivered' } },
      { name: 'asyncresponse.jobs.failed', value: 1, properties: { queue: 'worker', outcome: 'deadlettered' } },
      { name: 'asyncresponse.jobs.deadlettered', value: 1, properties: { queue: 'worker' } },
      { name: 'asyncresponse.jobs.redelivered', value: 2, properties: { queue: 'worker', outcome: 'failed' } },
      { name: 'asyncresponse.jobs.redelivered', value: 2, properties: { queue: 'worker', outcome: 'released' } },
      { name: 'asyncresponse.drain.duration_ms', value: 7999, properties: { queue: 'worker', outcome: 'budget' } },
    ]);
  });

  it('an empty drain sends only its duration; the outcome is the reason it stopped', () => {
    for (const stoppedBy of ['idle', 'budget', 'shutdown', 'error'] as const) {
      const m = new MemoryMetrics();
      m.drainFinished(report({ queue: 'callbacks', durationMs: 12, stoppedBy }));
      expect(m.records).toEqual([{ name: 'asyncresponse.drain.duration_ms', value: 12, properties: { queue: 'callbacks', outcome: stoppedBy } }]);
    }
  });

  it('queueDepth: five gauges, every one even when zero; no ready row means age 0', () => {
    const m = new MemoryMetrics();
    m.queueDepth({ queue: 'response', ready: 0, delayed: 0, leased: 0, deadLettered: 4, oldestReadyAgeSeconds: null });
    expect(m.records).toEqual([
      { name: 'asyncresponse.queue.ready', value: 0, properties: { queue: 'response' } },
      { name: 'asyncresponse.queue.delayed', value: 0, properties: { queue: 'response' } },
      { name: 'asyncresponse.queue.leased', value: 0, properties: { queue: 'response' } },
      { name: 'asyncresponse.queue.deadlettered', value: 4, properties: { queue: 'response' } },
      { name: 'asyncresponse.queue.oldest_ready_age_seconds', value: 0, properties: { queue: 'response' } },
    ]);
  });

  it('publish, prune, sweep and responses', () => {
    const m = new MemoryMetrics();
    m.jobsPublished('worker', 0);
    m.jobsPublished('worker', 100);
    m.pruned('subscribers', 0);
    m.pruned('recovery', 3);
    m.sweepFinished({ overdue: 1, routed: 1, failed: 0, cutShort: false, pruned: null, durationMs: 33 });
    m.responsePublished('recovery', 'worker');
    expect(m.records).toEqual([
      { name: 'asyncresponse.jobs.published', value: 100, properties: { queue: 'worker' } },
      { name: 'asyncresponse.prune.deleted', value: 3, properties: { table: 'recovery' } },
      { name: 'asyncresponse.channel.sweep.duration_ms', value: 33, properties: {} },
      { name: 'asyncresponse.responses.published', value: 1, properties: { delivery: 'recovery', source: 'worker' } },
    ]);
    expect(m.named(METRIC.pruneDeleted)).toHaveLength(1);
  });

  it('a throwing sink never reaches the caller', () => {
    const m = metricsOver(() => {
      throw new TypeError("Cannot read properties of undefined (reading 'trackMetric')");
    });
    expect(() => m.drainFinished(report({ claimed: 1 }))).not.toThrow();
    expect(() => m.queueDepth({ queue: 'w', ready: 1, delayed: 0, leased: 0, deadLettered: 0, oldestReadyAgeSeconds: 1 })).not.toThrow();
  });

  it('appInsightsMetrics passes name, value and the dimensions as properties to trackMetric', () => {
    const calls: unknown[] = [];
    const m = appInsightsMetrics({ trackMetric: (t) => void calls.push(t) });
    m.pruned('deadletters', 7);
    expect(m.enabled).toBe(true);
    expect(calls).toEqual([{ name: 'asyncresponse.prune.deleted', value: 7, properties: { table: 'deadletters' } }]);
  });
});

describe('metric names', () => {
  it('the workbook contract in observability.bicep lists exactly our names (but the ones it does not chart)', () => {
    const listed = listedMetricNames();
    expect(listed).toEqual(METRIC_NAMES.filter((n) => !METRICS_OUTSIDE_WORKBOOK.includes(n)));
  });

  it("docs/azure.md's Monitor table documents every name", () => {
    const docs = readFileSync(join(__dirname, '..', '..', 'docs', 'azure.md'), 'utf8');
    for (const name of METRIC_NAMES) expect(docs, name).toContain(`| \`${name}\` |`);
  });

  it('names are valid OpenTelemetry instrument names and unique', () => {
    for (const name of METRIC_NAMES) expect(name).toMatch(/^[a-z][a-z0-9_.\-/]{0,254}$/);
    expect(new Set(METRIC_NAMES).size).toBe(METRIC_NAMES.length);
  });
});
