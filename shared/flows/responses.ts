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
  /**
   * In process: responses published for the correlation id are offered to `offer` first, until the returned
   * function is called. `offer` resolves true when it took the response durably (the publisher then stores
   * nothing), false to let the publisher store and route it as usual.
   */
  listen?(correlationId: string, offer: (response: FlowHandoff) => Promise<boolean>): () => void;
  /** Routes responses stored for the correlation id before its registration existed (no waiter, no registration took them). */
  routeStored?(correlationId: string): Promise<void>;
}

/** A response offered in process (the payload as its JSON text). */
export interface FlowHandoff {
  id: string;
  correlationId: string;
  payloadJson: string;
  final: boolean;
  error?: string;
}

/** A response as an awaited step receives it. */
export interface FlowResponse<T = unknown> {
  id: string;
  payload: T;
  final: boolean;
  error?: string;
}
