import { describe, expect, it } from 'vitest';
import { buildEnvelope } from '../../shared/channel/envelope';
import { callbackSender, type InternalDelivery } from '../../shared/handlers/callback-sender';
import { RawJson } from '../../shared/json/raw-json';
import { silentLogger } from '../../shared/log';
import { PermanentJobError, type Job } from '../../shared/transport/job';

const internalRegistration = JSON.stringify({ SchemaVersion: 1, RegistrationId: 'r9', CorrelationId: 'c9', Target: 'flow', Data: { flowId: 'f1', stepName: 'approve' } });
const job: Job = {
  id: 'job-9',
  queue: 'callbacks',
  attempt: 1,
  headers: {},
  createdAt: new Date(),
  payload: { messageId: 'm9', correlationId: 'c9', registrationId: 'r9', registration: internalRegistration },
  payloadJson: '{}',
};
const ctx = { signal: new AbortController().signal, log: silentLogger };
const options = { allowedHosts: [], timeoutMs: 1000, holdMs: 1000 };
const noFetch = (async () => {
  throw new Error('an internal target must not make an HTTP call');
}) as unknown as typeof fetch;

describe('callbacks queue: internal recovery targets (the hook the flows layer uses)', () => {
  it('hands the stored response, payload text untouched, to the target named by the registration, with its data', async () => {
    const got: Array<[unknown, InternalDelivery]> = [];
    const envelope = buildEnvelope({ payload: new RawJson('{"approved":true,"n":12345678901234567890}'), final: true });
    const store = { holdForCallback: async () => envelope, isAcknowledged: async () => false };
    await callbackSender(options, store, noFetch, { flow: async (data, r) => got.push([data, r]) })(job, ctx);
    expect(got).toEqual([[{ flowId: 'f1', stepName: 'approve' }, { id: 'm9', correlationId: 'c9', payloadJson: '{"approved":true,"n":12345678901234567890}', final: true }]]);
  });

  it('passes progress and error responses on as they are', async () => {
    const got: InternalDelivery[] = [];
    const envelope = buildEnvelope({ payload: null, final: false, error: 'boom' });
    const store = { holdForCallback: async () => envelope, isAcknowledged: async () => false };
    await callbackSender(options, store, noFetch, { flow: async (_d, r) => got.push(r) })(job, ctx);
    expect(got).toEqual([{ id: 'm9', correlationId: 'c9', payloadJson: 'null', final: false, error: 'boom' }]);
  });

  it('a target failure fails the job (retried by the queue); an unknown target too; a vanished row is permanent', async () => {
    const stored = { holdForCallback: async () => buildEnvelope({ payload: 1, final: true }), isAcknowledged: async () => false };
    await expect(callbackSender(options, stored, noFetch, { flow: async () => Promise.reject(new Error('store down')) })(job, ctx)).rejects.toThrow('store down');
    await expect(callbackSender(options, stored, noFetch, {})(job, ctx)).rejects.toThrow("no internal recovery target 'flow'");
    const gone = { holdForCallback: async () => null, isAcknowledged: async () => false };
    await expect(callbackSender(options, gone, noFetch, { flow: async () => undefined })(job, ctx)).rejects.toBeInstanceOf(PermanentJobError);
    let called = false;
    const acked = { holdForCallback: async () => null, isAcknowledged: async () => true };
    await callbackSender(options, acked, noFetch, { flow: async () => (called = true) })(job, ctx);
    expect(called).toBe(false);
  });
});
