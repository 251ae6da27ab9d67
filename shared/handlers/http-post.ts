import * as http from 'node:http';
import * as https from 'node:https';

/** What a POST answered: the status line and the body as UTF-8 text. */
export interface PostAnswer {
  status: number;
  statusText: string;
  text: string;
}

/** POSTs `body` to `url`; rejects on a network fault or when `signal` aborts (with the signal's reason). */
export type HttpPost = (url: URL, headers: Record<string, string>, body: string, signal: AbortSignal) => Promise<PostAnswer>;

// Kept-alive connections per origin, like fetch's pool. node:http rather than fetch: at thousands of forwards a
// second, fetch (undici's WHATWG layer: Request/Response objects, web streams, an AbortController per request) cost
// about as much CPU as everything else a drain does per job together.
const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

/** One POST over a kept-alive connection. Redirects are answers like any other (not followed). */
export const httpPost: HttpPost = (url, headers, body, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const secure = url.protocol === 'https:';
    const payload = Buffer.from(body, 'utf8');
    const req = (secure ? https : http).request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(payload.length) }, agent: agents[secure ? 'https:' : 'http:'] },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          signal.removeEventListener('abort', onAbort);
          resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', fail);
        res.on('aborted', () => fail(new Error('the connection closed before the answer was complete')));
      },
    );
    function fail(err: unknown) {
      signal.removeEventListener('abort', onAbort);
      reject(err);
    }
    function onAbort() {
      req.destroy();
      fail(signal.reason);
    }
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', fail);
    req.end(payload);
  });
