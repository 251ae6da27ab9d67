// The response envelope stored in envelope_json: AsyncResponse's wire shape (SchemaVersion 1), plus Final.
// The payload is written and read as its JSON text (RawJson), so a response never changes its numbers.
import { rawJsonAt, stringifyJson } from '../json/raw-json';

export interface ResponseBody {
  /** Any JSON value; a RawJson is kept as its text. readEnvelope returns it as RawJson. */
  payload: unknown;
  /** set: the work failed; the message travels as ExceptionMessage (Success false). */
  error?: string;
  /** false = a progress/checkpoint message: a callback registration stays for the terminal one. */
  final: boolean;
  /**
   * The trace the response belongs to (W3C traceparent / tracestate: the job that answered, or the poster's
   * request): stored as TraceParent / TraceState, so a callback sent later carries it on (docs/tracing.md).
   */
  traceparent?: string;
  tracestate?: string;
}

interface Envelope {
  SchemaVersion: number;
  Success: boolean;
  Payload: unknown;
  ExceptionMessage: string | null;
  ExceptionStackTrace: string | null;
  Final?: boolean;
  /** Only when the response has a trace context; readers that do not know them ignore them. */
  TraceParent?: string;
  TraceState?: string;
}

export function buildEnvelope(body: ResponseBody): string {
  const envelope: Envelope = {
    SchemaVersion: 1,
    Success: body.error === undefined,
    Payload: body.payload ?? null,
    ExceptionMessage: body.error ?? null,
    ExceptionStackTrace: null,
    Final: body.final,
  };
  if (body.traceparent !== undefined) {
    envelope.TraceParent = body.traceparent;
    if (body.tracestate !== undefined) envelope.TraceState = body.tracestate;
  }
  return stringifyJson(envelope);
}

/** Reads an envelope; throws on anything that is not a SchemaVersion 1 envelope (never guesses). */
export function readEnvelope(json: string): ResponseBody {
  const e = JSON.parse(json) as Partial<Envelope> | null;
  if (e === null || typeof e !== 'object') throw new Error('the response envelope is not an object');
  if (e.SchemaVersion !== 1) throw new Error(`unsupported response envelope schema version ${String(e.SchemaVersion)}`);
  const payload = e.Payload === undefined || e.Payload === null ? null : (rawJsonAt(json, ['Payload']) ?? null);
  const body: ResponseBody = { payload, final: e.Final !== false };
  if (e.Success === false) body.error = e.ExceptionMessage ?? 'Unknown error during asynchronous processing.';
  if (typeof e.TraceParent === 'string') {
    body.traceparent = e.TraceParent;
    if (typeof e.TraceState === 'string') body.tracestate = e.TraceState;
  }
  return body;
}
