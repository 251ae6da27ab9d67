import * as http from 'node:http';
import * as https from 'node:https';

/** What a POST answered: the status line and the body as UTF-8 text. */
export interface PostAnswer {
  status: number;
  statusText: string;
  text: string;
  /** The Retry-After header, when the answer had one (a 429 or 503 asking the caller to back off). */
  retryAfter?: string;
}

/** POSTs `body` to `url`; rejects on a network fault or when `signal` aborts (with the signal's reason). */
export type HttpPost = (url: URL, headers: Record<string, string>, body: string, signal: AbortSignal) => Promise<PostAnswer>;

/**
 * Idle kept-alive connections are closed after this long (fetch's pool: 4 s), before a server's own idle timeout
 * (commonly 5 s) closes them under a request; the agent applies it to free sockets only.
 */
export const IDLE_SOCKET_TIMEOUT_MS = 4_000;

// Kept-alive connections per origin, like fetch's pool. node:http rather than fetch: at thousands of forwards a
// second, fetch (undici's WHATWG layer: Request/Response objects, web streams, an AbortController per request) cost
// about as much CPU as everything else a drain does per job together.
const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_TIMEOUT_MS }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_TIMEOUT_MS }),
};

/**
 * One POST over a kept-alive connection. Redirects are answers like any other (not followed). A kept-alive
 * connection the server closed just as it was reused fails before any answer: that request is sent once more on a
 * new connection (the server never read it), as Node's documentation advises.
 */
export const httpPost: HttpPost = async (url, headers, body, signal) => {
  const payload = Buffer.from(body, 'utf8');
  try {
    return await postOnce(url, headers, payload, signal);
  } catch (err) {
    if (!(err instanceof StaleSocketError) || signal.aborted) throw err instanceof StaleSocketError ? err.cause : err;
    return postOnce(url, headers, payload, signal).catch((again: unknown) => {
      throw again instanceof StaleSocketError ? again.cause : again;
    });
  }
};

class StaleSocketError extends Error {
  constructor(override readonly cause: unknown) {
    super('a reused connection was closed before the request was answered');
  }
}

function postOnce(url: URL, headers: Record<string, string>, payload: Buffer, signal: AbortSignal): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const secure = url.protocol === 'https:';
    let answered = false;
    const req = (secure ? https : http).request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(payload.length) }, agent: agents[secure ? 'https:' : 'http:'] },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          signal.removeEventListener('abort', onAbort);
          const answer: PostAnswer = { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', text: Buffer.concat(chunks).toString('utf8') };
          const retryAfter = res.headers['retry-after'];
          if (typeof retryAfter === 'string') answer.retryAfter = retryAfter;
          resolve(answer);
        });
        res.on('error', fail);
        res.on('aborted', () => fail(new Error('the connection closed before the answer was complete')));
      },
    );
    function fail(err: unknown) {
      signal.removeEventListener('abort', onAbort);
      const stale = !answered && req.reusedSocket && (err as NodeJS.ErrnoException)?.code === 'ECONNRESET' && !signal.aborted;
      reject(stale ? new StaleSocketError(err) : err);
    }
    function onAbort() {
      req.destroy();
      fail(signal.reason);
    }
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', fail);
    req.end(payload);
  });
}
