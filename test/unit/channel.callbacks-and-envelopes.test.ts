import { describe, expect, it } from 'vitest';
import { callbackUrlProblem } from '../../shared/channel/callback-url';
import { buildEnvelope, readEnvelope } from '../../shared/channel/envelope';
import { derivedUuid } from '../../shared/channel/ids';
import { isResponsePayloadPath, parseResponseBody } from '../../shared/channel/response-request';
import { signBody, verifySignature } from '../../shared/channel/signature';
import { RawJson } from '../../shared/json/raw-json';

describe('callback signature', () => {
  it('is sha256=<hex HMAC> of the exact body, verified in constant time', () => {
    const sig = signBody('s3cret-key-0123456789', '{"a":1}');
    expect(sig).toMatch(/^sha256=[0-9a-f]{64}$/);
    // Known answer: HMAC-SHA256(key "key", "The quick brown fox jumps over the lazy dog")
    expect(signBody('key', 'The quick brown fox jumps over the lazy dog')).toBe('sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
    expect(verifySignature('s3cret-key-0123456789', '{"a":1}', sig)).toBe(true);
    expect(verifySignature('s3cret-key-0123456789', '{"a":2}', sig)).toBe(false);
    expect(verifySignature('s3cret-key-0123456789', '{"a":1}', undefined)).toBe(false);
    expect(verifySignature('s3cret-key-0123456789', '{"a":1}', 'sha256=short')).toBe(false);
  });
});

describe('callback URL allowlist', () => {
  const allowed = ['hooks.example.com', '*.partner.io', '127.0.0.1', 'api.example.com:8443'];
  it('accepts https to allowed hosts, wildcard subdomains and explicit ports; http only for localhost', () => {
    expect(callbackUrlProblem('https://hooks.example.com/x', allowed)).toBeNull();
    expect(callbackUrlProblem('https://a.b.partner.io/x', allowed)).toBeNull();
    expect(callbackUrlProblem('https://api.example.com:8443/x', allowed)).toBeNull();
    expect(callbackUrlProblem('http://127.0.0.1:9999/x', allowed)).toBeNull();
  });
  it('rejects other hosts, ports, schemes, credentials and the bare wildcard domain', () => {
    expect(callbackUrlProblem('https://evil.com/x', allowed)).toMatch(/not in CALLBACK_ALLOWED_HOSTS/);
    expect(callbackUrlProblem('https://partner.io/x', allowed)).toMatch(/not in/);
    expect(callbackUrlProblem('https://api.example.com/x', allowed)).toMatch(/not in/);
    expect(callbackUrlProblem('http://hooks.example.com/x', allowed)).toMatch(/https/);
    expect(callbackUrlProblem('https://u:p@hooks.example.com/x', allowed)).toMatch(/credentials/);
    expect(callbackUrlProblem('not a url', allowed)).toMatch(/valid URL/);
    expect(callbackUrlProblem('https://hooks.example.com/x', [])).toMatch(/CALLBACK_ALLOWED_HOSTS/);
  });
});

describe('response envelope', () => {
  it('round-trips success, error and progress responses in the SchemaVersion 1 shape', () => {
    const ok = buildEnvelope({ payload: { n: 1 }, final: true });
    expect(JSON.parse(ok)).toEqual({ SchemaVersion: 1, Success: true, Payload: { n: 1 }, ExceptionMessage: null, ExceptionStackTrace: null, Final: true });
    expect(readEnvelope(ok)).toEqual({ payload: new RawJson('{"n":1}'), final: true }); // the payload's own text
    expect(readEnvelope(buildEnvelope({ payload: null, error: 'boom', final: true }))).toEqual({ payload: null, error: 'boom', final: true });
    expect(readEnvelope(buildEnvelope({ payload: 1, final: false })).final).toBe(false);
  });
  it('reads a .NET envelope without Final as final, and refuses unknown schema versions', () => {
    expect(readEnvelope('{"SchemaVersion":1,"Success":false,"Payload":null,"ExceptionMessage":null}')).toEqual({
      payload: null,
      error: 'Unknown error during asynchronous processing.',
      final: true,
    });
    expect(() => readEnvelope('{"SchemaVersion":999}')).toThrow(/schema version/);
    expect(() => readEnvelope('null')).toThrow();
  });
  it('writes and reads the payload as its own text: big integers, exponents and long decimals survive', () => {
    const payload = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';
    const envelope = buildEnvelope({ payload: new RawJson(payload), final: true });
    expect(envelope).toContain(`"Payload":${payload},`);
    expect(readEnvelope(envelope).payload).toEqual(new RawJson(payload));
    // an envelope another host wrote, with whitespace: the payload's text without the whitespace around it
    expect(readEnvelope(`{ "SchemaVersion": 1, "Success": true, "Payload": ${payload} }`).payload).toEqual(new RawJson(payload));
  });
});

describe('POST /api/responses validation', () => {
  it('accepts a response and defaults final to true', () => {
    expect(parseResponseBody({ correlationId: 'c', payload: 1 }, 1000)).toEqual({ ok: true, value: { correlationId: 'c', payload: 1, final: true } });
    expect(parseResponseBody({ correlationId: 'c', error: 'failed' }, 1000)).toMatchObject({ ok: true, value: { error: 'failed', payload: null } });
  });
  it('keeps a RawJson payload as it is and measures the limit on its text', () => {
    const payload = new RawJson('123456789012345678901234567890');
    expect(parseResponseBody({ correlationId: 'c', payload }, 1000)).toEqual({ ok: true, value: { correlationId: 'c', payload, final: true } });
    expect(parseResponseBody({ correlationId: 'c', payload: new RawJson(`"${'é'.repeat(600)}"`) }, 1000)).toMatchObject({ ok: false, errors: [{ field: 'payload' }] });
    expect(isResponsePayloadPath(['payload']) && !isResponsePayloadPath([]) && !isResponsePayloadPath(['payload', 'x'])).toBe(true);
  });
  it('names every bad field', () => {
    const r = parseResponseBody({ correlationId: ' c', id: 'x', final: 1, error: '', extra: 1 }, 1000);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.map((e) => e.field).sort()).toEqual(['correlationId', 'error', 'extra', 'final', 'id']);
  });
});

describe('derived ids', () => {
  it('are stable, distinct per name and shaped like version-5 UUIDs', () => {
    expect(derivedUuid('callback:a:b')).toBe(derivedUuid('callback:a:b'));
    expect(derivedUuid('callback:a:b')).not.toBe(derivedUuid('callback:a:c'));
    expect(derivedUuid('x')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
