// Between node:http and the @azure/functions HTTP types: the request a handler receives and the response
// it returns (an HttpResponse or an HttpResponseInit), converted the way the worker converts them.
import { HttpRequest, HttpResponse, type Cookie, type HttpResponseInit } from '@azure/functions';
import type { IncomingMessage, ServerResponse } from 'node:http';

export function toHttpRequest(
  req: IncomingMessage,
  url: string,
  body: Buffer,
  params: Record<string, string>,
): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  // No `query`: the library then parses it from the url and keeps repeated keys (?tag=a&tag=b).
  return new HttpRequest({
    method: req.method ?? 'GET',
    url,
    headers,
    params,
    body: body.length > 0 ? { bytes: body } : undefined,
  });
}

function isHttpResponse(value: object): value is HttpResponse {
  return value instanceof HttpResponse
    || (typeof (value as HttpResponse).arrayBuffer === 'function' && (value as HttpResponse).headers instanceof Headers);
}

/**
 * Writes a handler's result. Nothing (undefined/null) becomes 204, as the Functions host answers when an
 * HTTP function sets no response. Throws for a result that is not an object, like the library does.
 */
export async function writeHandlerResult(res: ServerResponse, method: string, result: unknown): Promise<void> {
  if (result === undefined || result === null) {
    res.writeHead(204).end();
    return;
  }
  if (typeof result !== 'object') {
    throw new TypeError('The HTTP response must be an object with optional properties "body", "status", "headers", and "cookies".');
  }
  const response = isHttpResponse(result) ? result : new HttpResponse(result as HttpResponseInit);
  const body = Buffer.from(await response.arrayBuffer());
  for (const [name, value] of response.headers) {
    if (name !== 'set-cookie') res.setHeader(name, value);
  }
  const cookies = [...response.headers.getSetCookie(), ...(response.cookies ?? []).map(serializeCookie)];
  if (cookies.length > 0) res.setHeader('set-cookie', cookies);
  res.statusCode = response.status;
  const noBody = method === 'HEAD' || response.status === 204 || response.status === 304;
  if (!noBody) res.setHeader('content-length', body.length);
  res.end(noBody ? undefined : body);
}

export function serializeCookie(c: Cookie): string {
  const parts = [`${c.name}=${c.value}`];
  if (c.domain) parts.push(`Domain=${c.domain}`);
  if (c.path) parts.push(`Path=${c.path}`);
  if (c.expires !== undefined) parts.push(`Expires=${new Date(c.expires).toUTCString()}`);
  if (c.maxAge !== undefined) parts.push(`Max-Age=${c.maxAge}`);
  if (c.secure) parts.push('Secure');
  if (c.httpOnly) parts.push('HttpOnly');
  if (c.sameSite) parts.push(`SameSite=${c.sameSite}`);
  return parts.join('; ');
}

export function sendProblem(
  res: ServerResponse,
  status: number,
  title: string,
  detail: string,
  headers: Record<string, string> = {},
): void {
  // ends with a newline, as the app's own JSON answers do (shared/http/problem.ts)
  const body = `${JSON.stringify({ type: 'about:blank', title, status, detail })}\n`;
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

export type BodyResult = { ok: true; body: Buffer } | { ok: false };

/** Reads the body up to `limit` bytes; a longer body is drained and discarded so the client can still read a 413. */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number(req.headers['content-length'] ?? 0) > limit;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? { ok: false } : { ok: true, body: Buffer.concat(chunks, size) }));
    req.on('error', reject);
    // A client that goes away mid-body: without this the request would count as in flight forever.
    req.on('close', () => reject(new Error('The client closed the connection before sending the whole body.')));
  });
}
