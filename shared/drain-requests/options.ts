// What the drain requests need to know (built from DRAIN_TRIGGER and DRAIN_* by shared/settings/drain-requests.ts).

/** The app setting naming the storage account (the queue trigger's `connection`). */
export const STORAGE_CONNECTION = 'AzureWebJobsStorage';

export type DrainTrigger = 'queue' | 'timer';

export interface DrainRequestConfig {
  /** `queue`: drains are requested through a storage queue (the timers are a slow safety net). `timer`: timers only. */
  trigger: DrainTrigger;
  /** The storage queue the requests travel on (its poison queue is `<name>-poison`). */
  queueName: string;
  /** The connection setting of the storage account (the trigger's `connection`). */
  connection: string;
  /** A requested drain ends once its queues stayed empty this long; also the coalescing window of a process. */
  idleGraceMs: number;
  /** Requests a drain stopped by its budget sends (more instances join). */
  fanOut: number;
  /** No extra fan-out while the request queue holds this many messages. */
  maxPending: number;
}
