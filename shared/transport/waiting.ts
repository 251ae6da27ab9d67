// A queue's waiting jobs (dashboard and GET /api/queues/{queue}/messages): rows not leased, either ready
// (available now) or delayed (available later), read in the ready index's order.

export const WAITING_STATES = ['ready', 'delayed'] as const;
export type WaitingState = (typeof WAITING_STATES)[number];

/** oldest: the ready index's order (priority DESC, available_at, created_at), the order claims take; newest: its reverse. */
export const WAITING_ORDERS = ['oldest', 'newest'] as const;
export type WaitingOrder = (typeof WAITING_ORDERS)[number];

/** The listing's bound, both for the store (TOP / LIMIT) and the route. */
export const MAX_WAITING_TOP = 100;

export interface WaitingJob {
  id: string;
  payloadJson: string;
  /** types.ts's Headers (not imported: types.ts imports this file for the store port). */
  headers: Record<string, string>;
  /** Deliveries so far (a released row was delivered before; 0 for a job never claimed). */
  attempts: number;
  availableAt: Date;
  createdAt: Date;
  /** Higher is claimed first. */
  priority: number;
  /** Present when the job was published with an ordering key. */
  orderingKey?: string;
}

export interface WaitingQuery {
  queue: string;
  state: WaitingState;
  order: WaitingOrder;
  /** 1..MAX_WAITING_TOP. */
  top: number;
}
