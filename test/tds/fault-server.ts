// A scripted TDS endpoint for fault injection: the REAL mssql/tedious client connects to it over TCP, logs in
// (SQL authentication, or Entra token-credential through the FEDAUTHINFO / FEDAUTH_TOKEN exchange) and sends its
// SQL batches and RPC (sp_executesql) requests; each request gets the scripted answer: rows, an ERROR token
// with a chosen number/class, a reset socket, or silence. It is a test of our retry code against real driver
// errors, not a stand-in for SQL Server: it understands no SQL, it only lets tests match request text.

import * as net from 'node:net';
import {
  done,
  DONE_STATUS,
  DONE_TOKEN,
  DONEINPROC_TOKEN,
  DONEPROC_TOKEN,
  errorToken,
  fedAuthInfoToken,
  loginAckTokens,
  MessageReader,
  PACKET,
  packets,
  preloginResponse,
  requestText,
  resultSetTokens,
  returnStatus,
  type ErrorSpec,
  type IncomingMessage,
  type ResultSet,
} from './tds';

export type { ErrorSpec, ResultSet, Row } from './tds';

export interface SqlRequest {
  /** 1-based connection number (in accept order) */
  connection: number;
  /** 1-based order among all scripted requests */
  seq: number;
  kind: 'batch' | 'rpc';
  /** epoch ms when it arrived */
  at: number;
  /** the request decoded as UCS-2 at both alignments: SQL text and string parameter values are in it */
  text: string;
}

export interface LoginAttempt {
  connection: number;
  seq: number;
  /** the access token the client sent (Entra token-credential logins only) */
  fedAuthToken?: string;
}

export type Reply =
  | { kind: 'result'; sets: ResultSet[] }
  | { kind: 'error'; error: ErrorSpec; closeAfter?: boolean }
  /** destroy the socket (TCP RST) instead of answering */
  | { kind: 'reset' }
  /** never answer this request, nor the client's cancel (attention): a hung server */
  | { kind: 'silent' }
  /** never answer this request, but acknowledge the client's cancel: a slow statement on a live server */
  | { kind: 'stall' };

export type LoginReply = { kind: 'ok' } | { kind: 'error'; error: ErrorSpec } | { kind: 'reset' } | { kind: 'silent' };

export const ok = (...sets: ResultSet[]): Reply => ({ kind: 'result', sets });
export const fail = (number: number, severity = 16, message?: string): Reply => ({
  kind: 'error',
  error: { number, class: severity, ...(message ? { message } : {}) },
});
export const reset = (): Reply => ({ kind: 'reset' });
export const silent = (): Reply => ({ kind: 'silent' });
export const stall = (): Reply => ({ kind: 'stall' });

export interface FaultServerOptions {
  /** the scripted answer to every request after login (default: an empty success) */
  onRequest?: (request: SqlRequest) => Reply | Promise<Reply>;
  /** the answer to every login (default: accepted) */
  onLogin?: (login: LoginAttempt) => LoginReply;
  /** answer LOGIN7 with FEDAUTHINFO and expect the client's access token (Entra token-credential clients) */
  fedAuth?: boolean;
  /** accept TCP connections but never say a word (not even to PRELOGIN) */
  mute?: boolean;
  database?: string;
}

interface Conn {
  id: number;
  socket: net.Socket;
  reader: MessageReader;
  state: 'prelogin' | 'login' | 'fedauth' | 'initial-sql' | 'ready' | 'dead';
  /** requests are answered one at a time, in order */
  queue: Promise<void>;
  /** a request answered with silence: its attention is ignored too */
  muted: boolean;
  /** a request left unanswered whose cancel will be acknowledged */
  stalled: boolean;
}

export class FaultServer {
  readonly requests: SqlRequest[] = [];
  readonly logins: LoginAttempt[] = [];
  /** connections accepted so far */
  accepted = 0;
  attentions = 0;
  private readonly server: net.Server;
  private readonly conns = new Set<Conn>();
  private seq = 0;
  private loginSeq = 0;

  constructor(public options: FaultServerOptions = {}) {
    this.server = net.createServer((socket) => this.accept(socket));
  }

  async start(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    return this.port;
  }

  get port(): number {
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('fault server is not listening');
    return address.port;
  }

  /** Requests whose text contains `marker` (e.g. a statement fragment). */
  requestsMatching(marker: string): SqlRequest[] {
    return this.requests.filter((r) => r.text.includes(marker));
  }

  /** Resets every open connection at once: what a failover does to a pool. */
  killAll(): void {
    for (const conn of this.conns) this.kill(conn);
  }

  get openConnections(): number {
    return [...this.conns].filter((c) => c.state !== 'dead').length;
  }

  async close(): Promise<void> {
    this.killAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: net.Socket): void {
    const conn: Conn = { id: ++this.accepted, socket, reader: new MessageReader(), state: 'prelogin', queue: Promise.resolve(), muted: false, stalled: false };
    this.conns.add(conn);
    socket.setNoDelay(true);
    socket.on('error', () => undefined); // the client may reset us too
    socket.on('close', () => {
      conn.state = 'dead';
      this.conns.delete(conn);
    });
    if (this.options.mute) return; // read nothing, answer nothing
    socket.on('data', (data: Buffer) => {
      let messages: IncomingMessage[];
      try {
        messages = conn.reader.push(data);
      } catch {
        this.kill(conn);
        return;
      }
      for (const message of messages) {
        conn.queue = conn.queue.then(() => this.handle(conn, message)).catch(() => this.kill(conn));
      }
    });
  }

  private kill(conn: Conn): void {
    conn.state = 'dead';
    if (!conn.socket.destroyed) conn.socket.resetAndDestroy();
  }

  private send(conn: Conn, payload: Buffer): void {
    if (conn.state === 'dead' || conn.socket.destroyed) return;
    for (const packet of packets(PACKET.TABULAR_RESULT, payload)) conn.socket.write(packet);
  }

  private async handle(conn: Conn, message: IncomingMessage): Promise<void> {
    if (conn.state === 'dead') return;
    if (message.type === PACKET.ATTENTION) {
      this.attentions++;
      // A cancel is acknowledged unless the request it cancels was scripted to go silent. tedious reads the
      // first message after its attention as the (cut short) response to the request, then waits for a second
      // message carrying DONE with the ATTN bit.
      if (conn.muted) return;
      if (conn.stalled) this.send(conn, done(DONE_TOKEN, DONE_STATUS.FINAL, 0));
      conn.stalled = false;
      this.send(conn, done(DONE_TOKEN, DONE_STATUS.ATTN, 0));
      return;
    }
    switch (conn.state) {
      case 'prelogin':
        if (message.type !== PACKET.PRELOGIN) return this.kill(conn);
        conn.state = 'login';
        return this.send(conn, preloginResponse());
      case 'login':
        if (message.type !== PACKET.LOGIN7) return this.kill(conn);
        if (this.options.fedAuth) {
          conn.state = 'fedauth';
          return this.send(conn, fedAuthInfoToken());
        }
        return this.answerLogin(conn, {});
      case 'fedauth': {
        if (message.type !== PACKET.FEDAUTH_TOKEN) return this.kill(conn);
        const length = message.payload.readUInt32LE(4);
        const fedAuthToken = message.payload.subarray(8, 8 + length).toString('utf16le');
        return this.answerLogin(conn, { fedAuthToken });
      }
      case 'initial-sql':
        // tedious's session settings batch (SET TEXTSIZE …) right after login
        conn.state = 'ready';
        return this.send(conn, done(DONE_TOKEN, DONE_STATUS.FINAL, 0));
      case 'ready':
        return this.answerRequest(conn, message);
    }
  }

  private answerLogin(conn: Conn, extra: { fedAuthToken?: string }): void {
    const attempt: LoginAttempt = { connection: conn.id, seq: ++this.loginSeq, ...extra };
    this.logins.push(attempt);
    const reply = this.options.onLogin?.(attempt) ?? { kind: 'ok' };
    switch (reply.kind) {
      case 'ok':
        conn.state = 'initial-sql';
        return this.send(conn, loginAckTokens(this.options.database ?? 'faultdb'));
      case 'error':
        // like SQL Server: the ERROR token, DONE with the error flag, then the server closes the connection
        this.send(conn, Buffer.concat([errorToken(reply.error), done(DONE_TOKEN, DONE_STATUS.ERROR, 0)]));
        conn.state = 'dead';
        conn.socket.end();
        return;
      case 'reset':
        return this.kill(conn);
      case 'silent':
        conn.muted = true;
        return;
    }
  }

  private async answerRequest(conn: Conn, message: IncomingMessage): Promise<void> {
    if (message.type === PACKET.TRANSACTION_MANAGER) {
      return this.send(conn, done(DONE_TOKEN, DONE_STATUS.FINAL, 0));
    }
    if (message.type !== PACKET.SQL_BATCH && message.type !== PACKET.RPC_REQUEST) return this.kill(conn);
    const kind = message.type === PACKET.RPC_REQUEST ? 'rpc' : 'batch';
    const request: SqlRequest = { connection: conn.id, seq: ++this.seq, kind, at: Date.now(), text: requestText(message.payload) };
    this.requests.push(request);
    conn.muted = false;
    conn.stalled = false;
    const reply = (await this.options.onRequest?.(request)) ?? ok();
    if (conn.state === 'dead') return;
    switch (reply.kind) {
      case 'reset':
        return this.kill(conn);
      case 'silent':
        conn.muted = true;
        return;
      case 'stall':
        conn.stalled = true;
        return;
      case 'error': {
        const tail =
          kind === 'rpc'
            ? Buffer.concat([returnStatus(0), done(DONEPROC_TOKEN, DONE_STATUS.ERROR, 0, 0xe0)])
            : done(DONE_TOKEN, DONE_STATUS.ERROR, 0);
        this.send(conn, Buffer.concat([errorToken(reply.error), tail]));
        if (reply.closeAfter || (reply.error.class ?? 16) >= 20) {
          // severity 20+ ends the session on a real server
          conn.state = 'dead';
          conn.socket.end();
        }
        return;
      }
      case 'result': {
        const parts: Buffer[] = [];
        for (const set of reply.sets) {
          parts.push(resultSetTokens(set));
          parts.push(
            done(kind === 'rpc' ? DONEINPROC_TOKEN : DONE_TOKEN, DONE_STATUS.MORE | DONE_STATUS.COUNT, set.rows.length),
          );
        }
        parts.push(kind === 'rpc' ? Buffer.concat([returnStatus(0), done(DONEPROC_TOKEN, DONE_STATUS.FINAL, 0, 0xe0)]) : done(DONE_TOKEN, DONE_STATUS.FINAL, 0));
        return this.send(conn, Buffer.concat(parts));
      }
    }
  }
}
