/** What the flows layer reports (the engine maps it onto shared/telemetry's metric names). */
export interface FlowMetrics {
  runStarted(flowName: string): void;
  runEnded(flowName: string, outcome: 'succeeded' | 'failed'): void;
  /** A step's body (local step) or its wait end-to-end as seen by the execution that completed it. */
  stepCompleted(flowName: string, kind: FlowStepKind, durationMs: number): void;
  /** An execution parked: `on` what it waits for. */
  runParked(flowName: string, on: 'timer' | 'response' | 'child'): void;
}

export type FlowStepKind = 'step' | 'await' | 'sleep' | 'child';

export const noopFlowMetrics: FlowMetrics = { runStarted() {}, runEnded() {}, stepCompleted() {}, runParked() {} };
