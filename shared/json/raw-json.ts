// A JSON value kept as the text it arrived as. Payloads travel as RawJson from the request (or the stored row)
// to every place that emits them, and stringifyJson splices the text in unchanged, so a queue never rounds a
// number (9007199254740993), turns 1e999 into null, or shortens a long decimal.
import { randomUUID } from 'node:crypto';
import { scanJson, type JsonPath } from './scan';

/** Set while stringifyJson runs: RawJson.toJSON leaves a placeholder that is replaced by its text afterwards. */
let splicing: { marker: string; call: string; texts: string[] } | undefined;

export class RawJson {
  #parsed: { value: unknown } | undefined;

  /**
   * `text` must be one valid JSON value (use RawJson.parse for text that is not known to be valid); `parsed`,
   * when the caller has already parsed it, saves parsing it again.
   */
  constructor(
    readonly text: string,
    parsed?: { value: unknown },
  ) {
    this.#parsed = parsed;
  }

  /** Validates (no depth limit: the scan does not recurse) and trims; throws a SyntaxError for invalid JSON. */
  static parse(text: string): RawJson {
    const scan = scanJson(text, { capture: (path) => path.length === 0 });
    if (!scan.ok) throw new SyntaxError(scan.message);
    const span = scan.spans[0]!;
    return new RawJson(text.slice(span.start, span.end));
  }

  /** The parsed value (numbers as JavaScript numbers): for reading fields, never for sending the value on. */
  get value(): unknown {
    this.#parsed ??= { value: JSON.parse(this.text) };
    return this.#parsed.value;
  }

  /** Inside stringifyJson: a placeholder for the text. Elsewhere (a serializer that does not know RawJson): the parsed value. */
  toJSON(): unknown {
    if (splicing) return `${splicing.marker}${splicing.texts.push(this.text) - 1}`;
    return this.value;
  }
}

// The placeholder marker holds a random UUID drawn at start-up and never written out (every placeholder is
// replaced), so no string a caller sends can look like a placeholder. One marker and one pattern per process:
// drawing a UUID and compiling a pattern per call cost more than the JSON.stringify of a small job. Each call
// numbers its placeholders with its own call number, and replaces only its own: a placeholder that escaped into a
// string some other way (a plain JSON.stringify of a RawJson inside a toJSON) is never filled with another text.
const MARKER = `rawjson:${randomUUID()}:`;
const PLACEHOLDER = new RegExp(`"${MARKER}(\\d+):(\\d+)"`, 'g');
let calls = 0;

/** JSON.stringify, with every RawJson inside the value written as its own text. */
export function stringifyJson(value: unknown): string {
  const outer = splicing;
  const context = { marker: `${MARKER}${++calls}:`, call: String(calls), texts: [] as string[] };
  splicing = context;
  let text: string;
  try {
    text = JSON.stringify(value);
  } finally {
    splicing = outer;
  }
  if (context.texts.length === 0 || text === undefined) return text;
  return text.replace(PLACEHOLDER, (match, call: string, n: string) => (call === context.call ? context.texts[Number(n)]! : match));
}

/** The JSON text of a payload: a RawJson's own text, anything else serialised (undefined counts as null). */
export function payloadText(payload: unknown): string {
  return payload instanceof RawJson ? payload.text : stringifyJson(payload ?? null);
}

/** The value of a payload for reading fields: a RawJson parsed, anything else as it is. */
export function payloadValue(payload: unknown): unknown {
  return payload instanceof RawJson ? payload.value : payload;
}

/**
 * The source text of the value at `path` in a JSON document (the last one when a name repeats, as JSON.parse
 * keeps); undefined when the document is not JSON or has no such value.
 */
export function rawJsonAt(text: string, path: JsonPath): RawJson | undefined {
  const scan = scanJson(text, { capture: (p) => p.length === path.length && p.every((segment, i) => segment === path[i]) });
  if (!scan.ok) return undefined;
  const span = scan.spans[scan.spans.length - 1];
  return span === undefined ? undefined : new RawJson(text.slice(span.start, span.end));
}
