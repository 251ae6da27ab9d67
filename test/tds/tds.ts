// Just enough TDS 7.4 (MS-TDS) for a server that the real tedious client logs in to and sends requests to:
// packet framing, the PRELOGIN answer, the LOGIN7 answer tokens, result sets (COLMETADATA / ROW / DONE*) and
// ERROR tokens. Everything is little-endian except the packet header and LOGINACK's TDS version.

export const PACKET = {
  SQL_BATCH: 0x01,
  RPC_REQUEST: 0x03,
  TABULAR_RESULT: 0x04,
  ATTENTION: 0x06,
  FEDAUTH_TOKEN: 0x08,
  TRANSACTION_MANAGER: 0x0e,
  LOGIN7: 0x10,
  PRELOGIN: 0x12,
} as const;

const HEADER = 8;
const STATUS_EOM = 0x01;

const TOKEN = {
  COLMETADATA: 0x81,
  ERROR: 0xaa,
  LOGINACK: 0xad,
  ROW: 0xd1,
  ENVCHANGE: 0xe3,
  FEDAUTHINFO: 0xee,
  RETURNSTATUS: 0x79,
  DONE: 0xfd,
  DONEPROC: 0xfe,
  DONEINPROC: 0xff,
} as const;

export const DONE_STATUS = { FINAL: 0x00, MORE: 0x01, ERROR: 0x02, COUNT: 0x10, ATTN: 0x20 } as const;

/** Latin1_General_CI_AS: LCID 0x0409, flags 0xD0, sort id 0x34. */
const COLLATION = Buffer.from([0x09, 0x04, 0xd0, 0x00, 0x34]);

class Writer {
  private chunks: Buffer[] = [];
  u8(v: number) {
    const b = Buffer.alloc(1);
    b.writeUInt8(v);
    return this.push(b);
  }
  u16(v: number) {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(v);
    return this.push(b);
  }
  u32(v: number) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    return this.push(b);
  }
  i32(v: number) {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    return this.push(b);
  }
  u32be(v: number) {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v >>> 0);
    return this.push(b);
  }
  u64(v: number) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return this.push(b);
  }
  f64(v: number) {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    return this.push(b);
  }
  /** B_VARCHAR: length in characters (1 byte) + UCS-2. */
  bVarChar(s: string) {
    this.u8(s.length);
    return this.push(Buffer.from(s, 'utf16le'));
  }
  /** US_VARCHAR: length in characters (2 bytes) + UCS-2. */
  usVarChar(s: string) {
    this.u16(s.length);
    return this.push(Buffer.from(s, 'utf16le'));
  }
  push(b: Buffer) {
    this.chunks.push(b);
    return this;
  }
  get buffer(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Splits a message into packets (EOM on the last one). */
export function packets(type: number, payload: Buffer, packetSize = 4096): Buffer[] {
  const out: Buffer[] = [];
  const room = packetSize - HEADER;
  let id = 1;
  for (let offset = 0; offset === 0 || offset < payload.length; offset += room) {
    const body = payload.subarray(offset, offset + room);
    const last = offset + room >= payload.length;
    const header = Buffer.alloc(HEADER);
    header.writeUInt8(type, 0);
    header.writeUInt8(last ? STATUS_EOM : 0, 1);
    header.writeUInt16BE(HEADER + body.length, 2);
    header.writeUInt16BE(0x0033, 4); // SPID
    header.writeUInt8(id++ % 256, 6);
    out.push(Buffer.concat([header, body]));
    if (last) break;
  }
  return out;
}

export interface IncomingMessage {
  type: number;
  /** the message body, packet headers stripped */
  payload: Buffer;
  /** status byte of the first packet (RESETCONNECTION = 0x08) */
  status: number;
}

/** Reassembles client messages from a byte stream. */
export class MessageReader {
  private buffered = Buffer.alloc(0);
  private parts: Buffer[] = [];
  private firstStatus = 0;
  private currentType: number | null = null;

  push(data: Buffer): IncomingMessage[] {
    this.buffered = Buffer.concat([this.buffered, data]);
    const out: IncomingMessage[] = [];
    while (this.buffered.length >= HEADER) {
      const length = this.buffered.readUInt16BE(2);
      if (length < HEADER) throw new Error(`bad TDS packet length ${length}`);
      if (this.buffered.length < length) break;
      const type = this.buffered.readUInt8(0);
      const status = this.buffered.readUInt8(1);
      const body = this.buffered.subarray(HEADER, length);
      this.buffered = this.buffered.subarray(length);
      if (this.currentType === null) {
        this.currentType = type;
        this.firstStatus = status;
      }
      this.parts.push(body);
      if (status & STATUS_EOM) {
        out.push({ type: this.currentType, payload: Buffer.concat(this.parts), status: this.firstStatus });
        this.parts = [];
        this.currentType = null;
      }
    }
    return out;
  }
}

/** PRELOGIN answer: version, ENCRYPT_NOT_SUP (so no TLS when the client has encrypt: false), no instance, no MARS. */
export function preloginResponse(): Buffer {
  const options: Array<[number, Buffer]> = [
    [0x00, Buffer.from([16, 0, 0x10, 0x00, 0, 0])], // VERSION 16.0.4096.0
    [0x01, Buffer.from([0x02])], // ENCRYPTION: NOT_SUP
    [0x02, Buffer.from([0x00])], // INSTOPT
    [0x03, Buffer.alloc(4)], // THREADID
    [0x04, Buffer.from([0x00])], // MARS off
  ];
  const headerLength = options.length * 5 + 1;
  const header = Buffer.alloc(headerLength);
  let dataOffset = headerLength;
  options.forEach(([token, data], i) => {
    header.writeUInt8(token, i * 5);
    header.writeUInt16BE(dataOffset, i * 5 + 1);
    header.writeUInt16BE(data.length, i * 5 + 3);
    dataOffset += data.length;
  });
  header.writeUInt8(0xff, headerLength - 1);
  return Buffer.concat([header, ...options.map(([, d]) => d)]);
}

function envChangeString(type: number, newValue: string, oldValue: string): Buffer {
  const body = new Writer().u8(type).bVarChar(newValue).bVarChar(oldValue).buffer;
  return new Writer().u8(TOKEN.ENVCHANGE).u16(body.length).push(body).buffer;
}

function envChangeCollation(): Buffer {
  const body = new Writer().u8(7).u8(COLLATION.length).push(COLLATION).u8(0).buffer;
  return new Writer().u8(TOKEN.ENVCHANGE).u16(body.length).push(body).buffer;
}

export function loginAckTokens(database: string): Buffer {
  const ack = new Writer()
    .u8(1) // interface: SQL_TSQL
    .u32be(0x74000004) // TDS 7.4
    .bVarChar('Microsoft SQL Server')
    .push(Buffer.from([16, 0, 0x10, 0x00])).buffer;
  return Buffer.concat([
    envChangeString(1, database, 'master'),
    envChangeCollation(),
    new Writer().u8(TOKEN.LOGINACK).u16(ack.length).push(ack).buffer,
    envChangeString(4, '4096', '4096'),
    done(TOKEN.DONE, DONE_STATUS.FINAL, 0),
  ]);
}

/** FEDAUTHINFO: where the client gets its token (STS URL) and for what (SPN). */
export function fedAuthInfoToken(spn = 'https://database.windows.net/', stsUrl = 'https://login.microsoftonline.com/common'): Buffer {
  const values: Array<[number, Buffer]> = [
    [0x01, Buffer.from(stsUrl, 'utf16le')],
    [0x02, Buffer.from(spn, 'utf16le')],
  ];
  const head = new Writer().u32(values.length);
  let offset = 4 + values.length * 9;
  for (const [id, data] of values) {
    head.u8(id).u32(data.length).u32(offset);
    offset += data.length;
  }
  const data = Buffer.concat([head.buffer, ...values.map(([, d]) => d)]);
  return new Writer().u8(TOKEN.FEDAUTHINFO).u32(data.length).push(data).buffer;
}

export interface ErrorSpec {
  number: number;
  /** severity; 16 when absent */
  class?: number;
  state?: number;
  message?: string;
}

export function errorToken(e: ErrorSpec): Buffer {
  const body = new Writer()
    .i32(e.number)
    .u8(e.state ?? 1)
    .u8(e.class ?? 16)
    .usVarChar(e.message ?? `Injected error ${e.number}.`)
    .bVarChar('faultserver')
    .bVarChar('')
    .u32(1).buffer;
  return new Writer().u8(TOKEN.ERROR).u16(body.length).push(body).buffer;
}

export function done(token: number, status: number, rowCount: number, curCmd = 0xc1): Buffer {
  return new Writer().u8(token).u16(status).u16(curCmd).u64(rowCount).buffer;
}

export const DONE_TOKEN = TOKEN.DONE;
export const DONEPROC_TOKEN = TOKEN.DONEPROC;
export const DONEINPROC_TOKEN = TOKEN.DONEINPROC;

export function returnStatus(value = 0): Buffer {
  return new Writer().u8(TOKEN.RETURNSTATUS).i32(value).buffer;
}

// ---- result sets -------------------------------------------------------------------------------------------

export type ColumnType = 'int' | 'float' | 'bit' | 'nvarchar' | 'datetime2';
export type Value = string | number | boolean | Date | null;
export type Row = Record<string, Value>;
export interface ResultSet {
  /** column order and types; inferred from the rows when absent (a column that is always null is nvarchar) */
  columns?: Array<{ name: string; type: ColumnType }>;
  rows: Row[];
}

function inferType(value: Value): ColumnType {
  if (typeof value === 'boolean') return 'bit';
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) < 2 ** 31 ? 'int' : 'float';
  if (value instanceof Date) return 'datetime2';
  return 'nvarchar';
}

export function columnsOf(set: ResultSet): Array<{ name: string; type: ColumnType }> {
  if (set.columns) return set.columns;
  const names: string[] = [];
  for (const row of set.rows) for (const name of Object.keys(row)) if (!names.includes(name)) names.push(name);
  return names.map((name) => {
    const sample = set.rows.map((r) => r[name]).find((v) => v !== null && v !== undefined);
    return { name, type: sample === undefined ? 'nvarchar' : inferType(sample) };
  });
}

function typeInfo(w: Writer, type: ColumnType): void {
  switch (type) {
    case 'int':
      w.u8(0x26).u8(4); // INTN(4)
      return;
    case 'float':
      w.u8(0x6d).u8(8); // FLTN(8)
      return;
    case 'bit':
      w.u8(0x68).u8(1); // BITN
      return;
    case 'datetime2':
      w.u8(0x2a).u8(7); // DATETIME2N(7)
      return;
    case 'nvarchar':
      w.u8(0xe7).u16(8000).push(COLLATION); // NVARCHAR(4000)
      return;
  }
}

const DAY_MS = 86_400_000;
/** days from 0001-01-01 to 1970-01-01 */
const EPOCH_DAYS = 719_162;

function writeValue(w: Writer, type: ColumnType, value: Value | undefined): void {
  const isNull = value === null || value === undefined;
  switch (type) {
    case 'int':
      if (isNull) w.u8(0);
      else w.u8(4).i32(Number(value));
      return;
    case 'float':
      if (isNull) w.u8(0);
      else w.u8(8).f64(Number(value));
      return;
    case 'bit':
      if (isNull) w.u8(0);
      else w.u8(1).u8(value ? 1 : 0);
      return;
    case 'datetime2': {
      if (isNull) {
        w.u8(0);
        return;
      }
      const ms = (value as Date).getTime();
      const days = Math.floor(ms / DAY_MS);
      const ticks = BigInt(ms - days * DAY_MS) * 10_000n; // 100 ns units since midnight (UTC)
      const time = Buffer.alloc(5);
      time.writeUIntLE(Number(ticks & 0xffffffffffn), 0, 5);
      const date = Buffer.alloc(3);
      date.writeUIntLE(days + EPOCH_DAYS, 0, 3);
      w.u8(8).push(time).push(date);
      return;
    }
    case 'nvarchar': {
      if (isNull) {
        w.u16(0xffff);
        return;
      }
      const bytes = Buffer.from(String(value), 'utf16le');
      if (bytes.length > 8000) throw new Error('fault server: nvarchar values are limited to 4000 characters');
      w.u16(bytes.length).push(bytes);
      return;
    }
  }
}

export function resultSetTokens(set: ResultSet): Buffer {
  const columns = columnsOf(set);
  const meta = new Writer().u8(TOKEN.COLMETADATA).u16(columns.length);
  for (const c of columns) {
    meta.u32(0).u16(0x0001); // user type, flags: nullable
    typeInfo(meta, c.type);
    meta.bVarChar(c.name);
  }
  const rows = set.rows.map((row) => {
    const w = new Writer().u8(TOKEN.ROW);
    for (const c of columns) writeValue(w, c.type, row[c.name]);
    return w.buffer;
  });
  return Buffer.concat([meta.buffer, ...rows]);
}

/** Decodes a request payload's UCS-2 text at both byte alignments (good enough to find SQL text and values). */
export function requestText(payload: Buffer): string {
  return payload.toString('utf16le') + '\n' + payload.subarray(1).toString('utf16le');
}
