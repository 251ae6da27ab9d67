import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpPost } from '../../shared/handlers/http-post';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<URL> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, Buffer.concat(chunks).toString('utf8'), res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/jobs?x=1`);
}

describe('httpPost (the forward handler transport)', () => {
  it('POSTs the body with its byte length and headers, and decodes a UTF-8 answer split mid-character', async () => {
    const seen: Array<{ method?: string; url?: string; length?: string; type?: string; body: string; socket: unknown }> = [];
    const url = await serve((req, body, res) => {
      seen.push({ method: req.method, url: req.url, length: req.headers['content-length'], type: req.headers['content-type'], body, socket: req.socket });
      const answer = Buffer.from('{"s":"漢字😀"}', 'utf8');
      res.writeHead(200, 'Fine');
      res.write(answer.subarray(0, 7)); // inside 漢
      setTimeout(() => res.end(answer.subarray(7)), 5);
    });
    const body = '{"payload":"Кириллица"}';
    const a = await httpPost(url, { 'content-type': 'application/json' }, body, new AbortController().signal);
    expect(a).toEqual({ status: 200, statusText: 'Fine', text: '{"s":"漢字😀"}' });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/jobs?x=1', length: String(Buffer.byteLength(body)), type: 'application/json', body });
    await httpPost(url, {}, '{}', new AbortController().signal);
    expect(seen[1]!.socket).toBe(seen[0]!.socket); // the connection was kept alive and reused
  });

  it('answers a redirect as it is (not followed) and any status with its text', async () => {
    let hits = 0;
    const url = await serve((_req, _body, res) => {
      hits++;
      res.writeHead(307, { location: 'http://127.0.0.1:1/elsewhere' }).end('moved');
    });
    expect(await httpPost(url, {}, '{}', new AbortController().signal)).toMatchObject({ status: 307, text: 'moved' });
    expect(hits).toBe(1);
  });

  it('rejects with the signal reason when aborted mid-request, and on a connection closed without an answer', async () => {
    const url = await serve(() => undefined); // never answers
    const abort = new AbortController();
    const pending = httpPost(url, {}, '{}', abort.signal);
    setTimeout(() => abort.abort(new Error('lease lost')), 20);
    await expect(pending).rejects.toThrow('lease lost');

    const reset = await serve((req) => req.socket.destroy());
    await expect(httpPost(reset, {}, '{}', new AbortController().signal)).rejects.toThrow(/socket hang up|ECONNRESET/);

    const aborted = new AbortController();
    aborted.abort(new Error('already gone'));
    await expect(httpPost(reset, {}, '{}', aborted.signal)).rejects.toThrow('already gone');
  });
});

describe('httpPost and kept-alive connections', () => {
  it('sends a request once more when the server closed the reused connection before reading it', async () => {
    let requests = 0;
    let closeNext = false;
    const url = await serve((req, _body, res) => {
      requests++;
      if (closeNext) {
        closeNext = false;
        req.socket.destroy(); // as a server whose idle timeout fired just as the request arrived
        return;
      }
      res.end('ok');
    });
    expect((await httpPost(url, {}, '{}', new AbortController().signal)).text).toBe('ok');
    closeNext = true;
    expect((await httpPost(url, {}, '{}', new AbortController().signal)).text).toBe('ok');
    expect(requests).toBe(3); // the first, the one on the reused connection that was reset, and its resend
  });

  it('a new connection reset before any answer is not sent again', async () => {
    let requests = 0;
    const url = await serve((req) => {
      requests++;
      req.socket.destroy();
    });
    await expect(httpPost(url, {}, '{}', new AbortController().signal)).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(requests).toBe(1);
  });
});
