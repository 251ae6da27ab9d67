import { RawJson } from '../json/raw-json';
import { MAX_JSON_DEPTH, scanJson, type JsonPath } from '../json/scan';
import { problem, type HttpAnswer } from './problem';

export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

export type JsonBody = { ok: true; value: unknown } | { ok: false; answer: HttpAnswer };

/**
 * Reads a JSON request body. JSON media types and a missing type are JSON; so is curl's default form type
 * (`curl -d '{…}'` sends application/x-www-form-urlencoded without being asked): its body is parsed as JSON and a
 * body that does not parse gets the 400 naming the parse error, as with a JSON type, never a 415 that sends the
 * user after a content-type problem they do not have. Any other declared media type (text/plain, application/xml)
 * is a 415: the client said it sends something else. A body nested
 * deeper than MAX_JSON_DEPTH is a 400. The values at the paths `rawAt` selects arrive as RawJson: the caller's
 * own text, which is what gets stored and sent on.
 */
export async function readJsonBody(
  contentType: string | null,
  contentLength: string | null,
  text: () => Promise<string>,
  maxBytes = MAX_REQUEST_BYTES,
  rawAt?: (path: JsonPath) => boolean,
): Promise<JsonBody> {
  if (contentLength !== null && Number(contentLength) > maxBytes) {
    return { ok: false, answer: problem(413, `the request body is ${contentLength} bytes; the limit is ${maxBytes}`) };
  }
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const jsonType = type === '' || type === 'application/json' || type.endsWith('+json');
  const formType = type === 'application/x-www-form-urlencoded';
  if (!jsonType && !formType) {
    return { ok: false, answer: problem(415, `the body must be JSON (Content-Type: application/json); got '${type}'`) };
  }
  // JSON is UTF-8 (RFC 8259); the body is read as UTF-8, so another declared charset would be misread
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return { ok: false, answer: problem(415, `the body must be UTF-8 JSON; got charset '${charset}'`) };
  }
  const raw = await text();
  if (Buffer.byteLength(raw, 'utf8') > maxBytes) {
    return { ok: false, answer: problem(413, `the request body is larger than ${maxBytes} bytes`) };
  }
  if (raw === '' && contentLength === null) {
    // no body at all (`curl -X POST` without -d), or a chunked one: Azure Functions passes a body on only with a
    // Content-Length, so a chunked one arrives empty
    return {
      ok: false,
      answer: problem(
        411,
        "the request has no body and no Content-Length: send a JSON document (curl -d '{…}'). A body sent chunked " +
          '(without a Content-Length) is dropped by Azure Functions, so send it with a Content-Length',
      ),
    };
  }
  if (raw.trim() === '') return { ok: false, answer: problem(400, 'the request body is empty; send a JSON document') };
  const scan = scanJson(raw, { maxDepth: MAX_JSON_DEPTH, capture: rawAt });
  if (!scan.ok && scan.reason === 'syntax') {
    const sentAs = formType ? ` (it came as ${type}, which curl -d sends by default; the body is read as JSON all the same)` : '';
    return { ok: false, answer: problem(400, `the body is not valid JSON: ${scan.message}${sentAs}`) };
  }
  if (!scan.ok) {
    return { ok: false, answer: problem(400, `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels (at position ${scan.offset}); the limit is ${MAX_JSON_DEPTH}`) };
  }
  const value: unknown = JSON.parse(raw);
  // in document order, so for a repeated name the last one wins, as in JSON.parse
  for (const span of scan.spans) replaceAt(value, span.path, new RawJson(raw.slice(span.start, span.end)));
  return { ok: true, value };
}

function replaceAt(root: unknown, path: ReadonlyArray<string | number>, replacement: RawJson): void {
  if (path.length === 0) return; // the whole body stays parsed: its fields are what the route reads
  let holder: unknown = root;
  for (const segment of path.slice(0, -1)) holder = (holder as Record<string | number, unknown>)[segment];
  // defineProperty: a captured member named __proto__ must stay an own property, as JSON.parse made it
  Object.defineProperty(holder, path[path.length - 1]!, { value: replacement, writable: true, enumerable: true, configurable: true });
}
