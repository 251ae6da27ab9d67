// How awaited steps meet the response channel, with the channel knowing nothing of flows: before a step triggers
// its request, it registers an internal recovery registration for its correlation id; a response stored with no
// live waiter is routed through the channel's recovery path (a reference job on the callbacks queue, retried and
// dead-lettered like any callback) to the `flow` internal target, which checkpoints the response into the step
// (recover.ts) and wakes the run. Nothing waits for a sweep: routing happens at the publish.

export const FLOW_RESPONSE_TARGET = 'flow';

/** What a flow registration stores beside the channel's fields (the internal target's data). */
export interface FlowResponseWatch {
  flowId: string;
  stepName: string;
}

export interface FlowResponseChannel {
  /** Upserts the registration (same id for the same run, step and correlation id), kept for ttlMs. */
  watch(correlationId: string, watch: FlowResponseWatch, ttlMs: number): Promise<void>;
}

/** A response as an awaited step receives it. */
export interface FlowResponse<T = unknown> {
  id: string;
  payload: T;
  final: boolean;
  error?: string;
}
