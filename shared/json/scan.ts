// An iterative (non-recursive) JSON validator. It accepts exactly what JSON.parse accepts (RFC 8259), refuses
// documents nested deeper than a limit (so no later recursive step can overflow the stack), and reports the
// exact source span of the values a caller asks for, so those can be stored and sent on as the caller's own
// text: re-serialising parsed JSON changes numbers (9007199254740993 → …992, 1e999 → null).

/** How deep request bodies may nest arrays and objects; the body's own object or array is level 1. */
export const MAX_JSON_DEPTH = 128;

/** Member names and array indexes from the root to a value; the root's path is empty. */
export type JsonPath = ReadonlyArray<string | number>;

export interface JsonSpan {
  path: Array<string | number>;
  /** offsets into the text: text.slice(start, end) is the value, without surrounding whitespace. */
  start: number;
  end: number;
}

export type JsonScan =
  | { ok: true; spans: JsonSpan[] }
  | { ok: false; reason: 'syntax' | 'depth'; message: string; offset: number };

export interface ScanOptions {
  /** Deeper documents are refused (reason `depth`). Default: unlimited (the scan itself never recurses). */
  maxDepth?: number;
  /** Called as each value begins; true records its span. Duplicate names yield one span each, in order. */
  capture?: (path: JsonPath) => boolean;
}

class ScanError extends Error {
  constructor(
    readonly reason: 'syntax' | 'depth',
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const OBJECT = 0;
const ARRAY = 1;
/** A run of string characters that need no attention: not a quote, backslash or control character. */
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;

export function scanJson(text: string, options: ScanOptions = {}): JsonScan {
  try {
    return { ok: true, spans: new Scanner(text, options).run() };
  } catch (err) {
    if (err instanceof ScanError) return { ok: false, reason: err.reason, message: err.message, offset: err.offset };
    throw err;
  }
}

class Scanner {
  private i = 0;
  private readonly kinds: number[] = [];
  private readonly path: Array<string | number> = [];
  /** Open captured values: where each began and at which depth. */
  private readonly open: Array<{ start: number; depth: number }> = [];
  private readonly spans: JsonSpan[] = [];
  private readonly maxDepth: number;

  constructor(
    private readonly text: string,
    private readonly options: ScanOptions,
  ) {
    this.maxDepth = options.maxDepth ?? Infinity;
  }

  run(): JsonSpan[] {
    const { text } = this;
    this.skipWhitespace();
    if (this.i >= text.length) throw new ScanError('syntax', 'Unexpected end of JSON input', this.i);
    for (;;) {
      // a value begins at this.i
      if (this.options.capture?.(this.path)) this.open.push({ start: this.i, depth: this.kinds.length });
      const c = text.charCodeAt(this.i);
      let ended = true;
      if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        if (this.kinds.length >= this.maxDepth) {
          throw new ScanError('depth', `JSON nested deeper than ${this.maxDepth} levels of arrays and objects at position ${this.i}`, this.i);
        }
        this.i++;
        this.skipWhitespace();
        if (c === 0x7b) {
          this.kinds.push(OBJECT);
          this.path.push('');
          if (text.charCodeAt(this.i) === 0x7d /* } */) this.i++;
          else {
            this.path[this.path.length - 1] = this.memberName();
            ended = false;
          }
        } else {
          this.kinds.push(ARRAY);
          this.path.push(0);
          if (text.charCodeAt(this.i) === 0x5d /* ] */) this.i++;
          else ended = false;
        }
        if (ended) this.close();
      } else if (c === 0x22 /* " */) this.string();
      else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) this.number();
      else if (text.startsWith('true', this.i)) this.i += 4;
      else if (text.startsWith('false', this.i)) this.i += 5;
      else if (text.startsWith('null', this.i)) this.i += 4;
      else this.unexpected();
      if (!ended) continue; // the first member or element of a container follows
      this.valueEnded();
      // after a value: a separator, the end of its container(s), or the end of the document
      for (;;) {
        this.skipWhitespace();
        const depth = this.kinds.length;
        if (depth === 0) {
          if (this.i < text.length) this.unexpected();
          return this.spans;
        }
        const kind = this.kinds[depth - 1];
        const d = text.charCodeAt(this.i);
        if (d === 0x2c /* , */) {
          this.i++;
          this.skipWhitespace();
          if (kind === OBJECT) this.path[depth - 1] = this.memberName();
          else this.path[depth - 1] = (this.path[depth - 1] as number) + 1;
          break; // the next value
        }
        if ((kind === OBJECT && d === 0x7d) || (kind === ARRAY && d === 0x5d)) {
          this.i++;
          this.close();
          this.valueEnded();
          continue;
        }
        this.unexpected();
      }
    }
  }

  private close(): void {
    this.kinds.pop();
    this.path.pop();
  }

  private valueEnded(): void {
    const top = this.open[this.open.length - 1];
    if (top !== undefined && top.depth === this.kinds.length) {
      this.open.pop();
      this.spans.push({ path: [...this.path], start: top.start, end: this.i });
    }
  }

  /** `"name"` `:` and the whitespace after it; returns the decoded name. */
  private memberName(): string {
    if (this.text.charCodeAt(this.i) !== 0x22) this.unexpected();
    const start = this.i;
    const escaped = this.string();
    const end = this.i;
    this.skipWhitespace();
    if (this.text.charCodeAt(this.i) !== 0x3a /* : */) this.unexpected();
    this.i++;
    this.skipWhitespace();
    return escaped ? (JSON.parse(this.text.slice(start, end)) as string) : this.text.slice(start + 1, end - 1);
  }

  /** Skips a string literal; true when it held an escape. */
  private string(): boolean {
    const { text } = this;
    let escaped = false;
    this.i++;
    for (;;) {
      PLAIN_RUN.lastIndex = this.i;
      PLAIN_RUN.test(text); // skips ordinary characters in one native step
      this.i = PLAIN_RUN.lastIndex;
      if (this.i >= text.length) throw new ScanError('syntax', 'Unterminated string in JSON', this.i);
      const c = text.charCodeAt(this.i);
      if (c === 0x22) {
        this.i++;
        return escaped;
      }
      if (c < 0x20) throw new ScanError('syntax', `Bad control character in string literal at position ${this.i}`, this.i);
      if (c === 0x5c /* \ */) {
        escaped = true;
        const e = text.charCodeAt(this.i + 1);
        if (e === 0x75 /* u */) {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(this.i + 2, this.i + 6))) throw new ScanError('syntax', `Bad Unicode escape at position ${this.i}`, this.i);
          this.i += 6;
          continue;
        }
        // " \ / b f n r t
        if (!(e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74)) {
          throw new ScanError('syntax', `Bad escaped character at position ${this.i + 1}`, this.i + 1);
        }
        this.i += 2;
        continue;
      }
      this.i++;
    }
  }

  /** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
  private number(): void {
    const { text } = this;
    if (text.charCodeAt(this.i) === 0x2d) this.i++;
    const first = text.charCodeAt(this.i);
    if (first === 0x30) this.i++;
    else if (first >= 0x31 && first <= 0x39) this.digits();
    else this.unexpected();
    if (text.charCodeAt(this.i) === 0x2e /* . */) {
      this.i++;
      if (!this.digits()) this.unexpected();
    }
    const e = text.charCodeAt(this.i);
    if (e === 0x65 || e === 0x45) {
      this.i++;
      const sign = text.charCodeAt(this.i);
      if (sign === 0x2b || sign === 0x2d) this.i++;
      if (!this.digits()) this.unexpected();
    }
  }

  private digits(): boolean {
    const start = this.i;
    for (let c = this.text.charCodeAt(this.i); c >= 0x30 && c <= 0x39; c = this.text.charCodeAt(this.i)) this.i++;
    return this.i > start;
  }

  private skipWhitespace(): void {
    for (let c = this.text.charCodeAt(this.i); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = this.text.charCodeAt(this.i)) this.i++;
  }

  private unexpected(): never {
    if (this.i >= this.text.length) throw new ScanError('syntax', 'Unexpected end of JSON input', this.i);
    throw new ScanError('syntax', `Unexpected character ${JSON.stringify(this.text[this.i])} at position ${this.i}`, this.i);
  }
}
