// The app's custom metrics, behind intention-revealing methods. Every implementation shares one mapping from
// events to (name, value, dimensions) (metricsOver): App Insights sends them with defaultClient.trackMetric,
// MemoryMetrics records them for tests, noopMetrics does nothing (telemetry off).
//
// Counters are emitted only when non-zero (an empty drain costs no rows); gauges and durations always.
// Emitting never throws: a telemetry failure must not fail a drain, a publish or a settlement.

import type { TelemetryClient } from 'applicationinsights';
import type { Delivery } from '../channel/response-channel';
import type { SweepReport } from '../channel/sweep';
import type { FlowStepKind } from '../flows/metrics';
import type { DrainReport } from '../transport/drain-loop';
import type { QueueStats } from '../transport/types';
import { DIM, METRIC, type MetricName, type PruneTable, type ResponseSource } from './metric-names';

export type Dimensions = Record<string, string>;

export interface Metrics {
  /** false for noopMetrics: callers may skip work whose only purpose is a metric (e.g. queue statistics). */
  readonly enabled: boolean;
  /** Jobs a publish inserted (not duplicates). */
  jobsPublished(queue: string, inserted: number): void;
  /** One drain's counts (claimed, completed, failed, dead-lettered, redelivered) and its duration. */
  drainFinished(report: DrainReport): void;
  /** The five queue gauges. */
  queueDepth(stats: QueueStats): void;
  /** The sweep's duration (its prune counts go through pruned()). */
  sweepFinished(report: SweepReport): void;
  pruned(table: PruneTable, deleted: number): void;
  /** A response stored in the channel (not a repeated id). */
  responsePublished(delivery: Delivery, source: ResponseSource): void;
  /** The flows layer's events (shared/flows/metrics.ts). */
  flowRunStarted(flow: string): void;
  flowRunEnded(flow: string, outcome: 'succeeded' | 'failed'): void;
  flowStepCompleted(flow: string, kind: FlowStepKind, durationMs: number): void;
  flowRunParked(flow: string, on: 'timer' | 'response' | 'child'): void;
}

export type MetricSink = (name: MetricName, value: number, dimensions: Dimensions) => void;

/** The one mapping from events to metric names, values and dimensions. */
export function metricsOver(sink: MetricSink, enabled = true): Metrics {
  const emit = (name: MetricName, value: number, dims: Dimensions) => {
    try {
      sink(name, value, dims);
    } catch {
      /* telemetry is best effort */
    }
  };
  const count = (name: MetricName, value: number, dims: Dimensions) => {
    if (value > 0) emit(name, value, dims);
  };
  return {
    enabled,
    jobsPublished(queue, inserted) {
      count(METRIC.jobsPublished, inserted, { [DIM.queue]: queue });
    },
    drainFinished(r) {
      const queue = { [DIM.queue]: r.queue };
      count(METRIC.jobsClaimed, r.claimed, queue);
      count(METRIC.jobsCompleted, r.completed, queue);
      // `retried` = handler failures NAKed with backoff (incl. a dead-letter move that fell back to a NAK).
      count(METRIC.jobsFailed, r.retried, { ...queue, [DIM.outcome]: 'redelivered' });
      count(METRIC.jobsFailed, r.deadLettered, { ...queue, [DIM.outcome]: 'deadlettered' });
      count(METRIC.jobsDeadLettered, r.deadLettered, queue);
      count(METRIC.jobsRedelivered, r.retried, { ...queue, [DIM.outcome]: 'failed' });
      count(METRIC.jobsRedelivered, r.released, { ...queue, [DIM.outcome]: 'released' });
      emit(METRIC.drainDuration, r.durationMs, { ...queue, [DIM.outcome]: r.stoppedBy });
    },
    queueDepth(s) {
      const queue = { [DIM.queue]: s.queue };
      emit(METRIC.queueReady, s.ready, queue);
      emit(METRIC.queueDelayed, s.delayed, queue);
      emit(METRIC.queueLeased, s.leased, queue);
      emit(METRIC.queueDeadLettered, s.deadLettered, queue);
      emit(METRIC.queueOldestReadyAge, s.oldestReadyAgeSeconds ?? 0, queue);
    },
    sweepFinished(r) {
      emit(METRIC.sweepDuration, r.durationMs, {});
    },
    pruned(table, deleted) {
      count(METRIC.pruneDeleted, deleted, { [DIM.table]: table });
    },
    responsePublished(delivery, source) {
      emit(METRIC.responsesPublished, 1, { [DIM.delivery]: delivery, [DIM.source]: source });
    },
    flowRunStarted(flow) {
      emit(METRIC.flowRunsStarted, 1, { [DIM.flow]: flow });
    },
    flowRunEnded(flow, outcome) {
      emit(METRIC.flowRunsEnded, 1, { [DIM.flow]: flow, [DIM.outcome]: outcome });
    },
    flowStepCompleted(flow, kind, durationMs) {
      emit(METRIC.flowStepDuration, durationMs, { [DIM.flow]: flow, [DIM.kind]: kind });
    },
    flowRunParked(flow, on) {
      emit(METRIC.flowRunsParked, 1, { [DIM.flow]: flow, [DIM.on]: on });
    },
  };
}

/** Telemetry off: every method is a no-op and nothing is computed. */
export const noopMetrics: Metrics = {
  enabled: false,
  jobsPublished() {},
  drainFinished() {},
  queueDepth() {},
  sweepFinished() {},
  pruned() {},
  responsePublished() {},
  flowRunStarted() {},
  flowRunEnded() {},
  flowStepCompleted() {},
  flowRunParked() {},
};

/**
 * Application Insights: each value is one `trackMetric` call. In applicationinsights 3.x that records it on an
 * OpenTelemetry histogram named after the metric (shim/telemetryClient.js), which the Azure Monitor exporter
 * sends once a minute as one `customMetrics` row per name and dimension set (valueSum, valueCount, valueMin,
 * valueMax); metrics are never sampled.
 */
export function appInsightsMetrics(client: Pick<TelemetryClient, 'trackMetric'>): Metrics {
  return metricsOver((name, value, properties) => client.trackMetric({ name, value, properties }));
}

export interface MetricRecord {
  name: MetricName;
  value: number;
  properties: Dimensions;
}

/** Records every metric in memory, for tests. */
export class MemoryMetrics implements Metrics {
  readonly records: MetricRecord[] = [];
  private readonly inner = metricsOver((name, value, properties) => this.records.push({ name, value, properties }));
  readonly enabled = true;

  jobsPublished(queue: string, inserted: number): void {
    this.inner.jobsPublished(queue, inserted);
  }
  drainFinished(report: DrainReport): void {
    this.inner.drainFinished(report);
  }
  queueDepth(stats: QueueStats): void {
    this.inner.queueDepth(stats);
  }
  sweepFinished(report: SweepReport): void {
    this.inner.sweepFinished(report);
  }
  pruned(table: PruneTable, deleted: number): void {
    this.inner.pruned(table, deleted);
  }
  responsePublished(delivery: Delivery, source: ResponseSource): void {
    this.inner.responsePublished(delivery, source);
  }
  flowRunStarted(flow: string): void {
    this.inner.flowRunStarted(flow);
  }
  flowRunEnded(flow: string, outcome: 'succeeded' | 'failed'): void {
    this.inner.flowRunEnded(flow, outcome);
  }
  flowStepCompleted(flow: string, kind: FlowStepKind, durationMs: number): void {
    this.inner.flowStepCompleted(flow, kind, durationMs);
  }
  flowRunParked(flow: string, on: 'timer' | 'response' | 'child'): void {
    this.inner.flowRunParked(flow, on);
  }

  named(name: MetricName): MetricRecord[] {
    return this.records.filter((r) => r.name === name);
  }
  clear(): void {
    this.records.length = 0;
  }
}
