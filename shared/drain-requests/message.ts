// The drain-request message: which queues a drain should claim from (worker queues, `response`, `callbacks`)
// and whether the channel sweep should run. A hint only: the SQL table is the truth, so a lost, repeated or
// late request costs latency or a little work, never a job. Sent base64-encoded, as the Functions host's queue
// trigger expects by default (host.json extensions.queues.messageEncoding = base64).

/** The target that asks for a channel sweep rather than a queue drain. */
export const SWEEP_TARGET = '#sweep';
/** The target that asks for an evaluation of the due schedules (sent to surface at a schedule's next slot). */
export const SCHEDULES_TARGET = '#schedules';

export interface DrainRequestMessage {
  /** Queues to drain. */
  queues: string[];
  /** Run the channel sweep (overdue unacked responses to their callbacks). */
  sweep?: boolean;
  /** Evaluate the due schedules (shared/schedules). */
  schedules?: boolean;
  /**
   * The request may have been sent before the work it announces was committed (the T-SQL announce,
   * stores/sqlserver/announce.ts, calls from inside the publisher's transaction): a drain of a named queue that
   * claims nothing sends the request again, visible after RECHECK_DELAYS_SECONDS, this many more times.
   */
  recheck?: number;
}

/** How many re-checks a T-SQL announce asks for. */
export const ANNOUNCE_RECHECKS = 3;
/** When each re-check surfaces, by how many are left (3 → 2 s, 2 → 4 s, 1 → 8 s): ~15 s after the announce in all. */
export const RECHECK_DELAYS_SECONDS: Readonly<Record<number, number>> = { 3: 2, 2: 4, 1: 8 };
const MAX_RECHECK = 3;

/**
 * The request a drain of `queue` sends when it claimed nothing although its request asked for re-checks: the same
 * queue, one re-check fewer, visible later. undefined when no re-check is left (or none was asked).
 */
export function recheckRequest(request: DrainRequestMessage, queue: string): { message: DrainRequestMessage; visibilitySeconds: number } | undefined {
  const left = request.recheck ?? 0;
  if (left <= 0) return undefined;
  return { message: { queues: [queue], ...(left > 1 ? { recheck: left - 1 } : {}) }, visibilitySeconds: RECHECK_DELAYS_SECONDS[left] ?? 2 };
}

export function requestFor(target: string): DrainRequestMessage {
  if (target === SCHEDULES_TARGET) return { queues: [], schedules: true };
  return target === SWEEP_TARGET ? { queues: [], sweep: true } : { queues: [target] };
}

export function encodeRequest(message: DrainRequestMessage): string {
  return Buffer.from(JSON.stringify(message), 'utf8').toString('base64');
}

/**
 * What the trigger hands the function: the host decodes base64 and, for JSON text, passes the parsed object.
 * Anything else (a hand-made message, a string) is refused with the reason, and the function drops it.
 */
export function parseRequest(body: unknown): DrainRequestMessage | string {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return 'the message is not JSON';
    }
  }
  if (typeof value !== 'object' || value === null) return 'the message is not a JSON object';
  const { queues, sweep, schedules, recheck } = value as Record<string, unknown>;
  if (!Array.isArray(queues) || !queues.every((q): q is string => typeof q === 'string')) return '`queues` must be an array of queue names';
  if (sweep !== undefined && typeof sweep !== 'boolean') return '`sweep` must be true or false';
  if (schedules !== undefined && typeof schedules !== 'boolean') return '`schedules` must be true or false';
  if (recheck !== undefined && !(Number.isInteger(recheck) && (recheck as number) >= 0 && (recheck as number) <= MAX_RECHECK)) {
    return `\`recheck\` must be an integer from 0 to ${MAX_RECHECK}`;
  }
  return { queues, ...(sweep ? { sweep } : {}), ...(schedules ? { schedules } : {}), ...(recheck ? { recheck: recheck as number } : {}) };
}
