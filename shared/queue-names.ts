// Names of the queues the engine runs itself, besides the worker queues a deployment configures.

/** Raw responses published here are routed into the response channel (response ingress). */
export const RESPONSE_QUEUE = 'response';
/** Internal: one job per callback registration of a response that no live waiter took. */
export const CALLBACK_QUEUE = 'callbacks';
export const BUILT_IN_QUEUES: readonly string[] = [RESPONSE_QUEUE, CALLBACK_QUEUE];
export const DEFAULT_DEAD_LETTER_QUEUE = 'deadletter';
