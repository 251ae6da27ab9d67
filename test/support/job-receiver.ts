// A forward target on loopback for e2e tests: parses each forwarded job, hands it to `record`, and answers with a
// fixed status (a 2xx settles the job; anything else fails the attempt).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface JobReceiver {
  port: number;
  close(): Promise<void>;
}

export async function startJobReceiver<T>(record: (job: T) => void, answer: { status: number; body: string }): Promise<JobReceiver> {
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      record(JSON.parse(body) as T);
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}
