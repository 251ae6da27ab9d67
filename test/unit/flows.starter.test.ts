import { describe, expect, it } from 'vitest';
import { flowIdProblem } from '../../shared/flows/flow-id';
import { startJobId } from '../../shared/flows/jobs';
import { parseFlowState } from '../../shared/flows/state';
import { FlowHarness } from '../support/flow-harness';

describe('starting a flow run (durable-flows.md §1.2)', () => {
  it('validates ids: portable, path-safe, no padding, no control characters', () => {
    expect(flowIdProblem('order-42:approve')).toBeNull();
    expect(flowIdProblem('CASE-flow')).toBeNull();
    expect(flowIdProblem('')).toBe('must not be empty');
    expect(flowIdProblem(' padded')).toBe('must not begin or end with whitespace');
    expect(flowIdProblem('a/b')).toBe('must not contain / \\ ? or #');
    expect(flowIdProblem('a#b')).toBe('must not contain / \\ ? or #');
    expect(flowIdProblem('a\u0001b')).toBe('must not contain control characters');
    expect(flowIdProblem('x'.repeat(401))).toMatch(/at most 400/);
    expect(flowIdProblem('é'.repeat(400))).toBeNull();
    expect(flowIdProblem('€'.repeat(400))).toMatch(/1023 UTF-8 bytes/);
    expect(flowIdProblem(7)).toBe('must be a string');
  });

  it('publishes the start job carrying the whole initial ledger, then writes the ledger', async () => {
    const h = new FlowHarness();
    h.registry.register('f', async () => 1);
    const order: string[] = [];
    h.store.beforeCall = (op) => {
      if (op === 'tryCreate') order.push(`tryCreate (jobs: ${h.jobs.size})`);
    };
    const started = await h.flows.start('f', { a: 1 }, { id: 'run-1' });
    expect(started).toEqual({ id: 'run-1', status: 'Running', created: true });
    expect(order).toEqual(['tryCreate (jobs: 1)']);
    const job = h.jobs.get(startJobId('run-1'))!;
    expect(job.job.kind).toBe('start');
    const carried = parseFlowState('run-1', (job.job as { stateJson: string }).stateJson, 0);
    expect(carried).toMatchObject({ flowName: 'f', inputJson: '{"a":1}', status: 'Running', attempts: 0, revision: 0 });
    expect(await h.state('run-1')).toEqual(carried);
  });

  it('a failed publish persists nothing (the publish is the commit point); the start can be retried with the same id', async () => {
    const h = new FlowHarness();
    h.registry.register('f', async () => 'ok');
    h.publishFaults.push('before');
    await expect(h.flows.start('f', null, { id: 'retry-me' })).rejects.toThrow('publish failed');
    expect(await h.flows.get('retry-me')).toBeNull();
    expect(h.jobs.size).toBe(0);
    await h.flows.start('f', null, { id: 'retry-me' });
    await h.run(0);
    expect((await h.state('retry-me')).status).toBe('Succeeded');
  });

  it('the start job alone creates the run when the starter died after publishing', async () => {
    const h = new FlowHarness();
    h.registry.register('f', async () => 'ok');
    h.store.beforeCall = (op) => {
      if (op === 'tryCreate' && h.handled.length === 0 && h.jobs.size === 1 && !h.jobs.values().next().value!.running) throw new Error('starter crashed');
    };
    await expect(h.flows.start('f', null, { id: 'orphan' })).rejects.toThrow('starter crashed');
    h.store.beforeCall = undefined;
    await h.run(0);
    expect((await h.state('orphan')).status).toBe('Succeeded');
  });

  it('is idempotent: the same id, flow and (semantically equal) input returns the existing run; other input is a conflict', async () => {
    const h = new FlowHarness();
    h.registry.register('f', async () => 'ok');
    h.registry.register('g', async () => 'ok');
    await h.flows.start('f', { a: 1, b: [1, 2] }, { id: 'same' });
    await expect(h.flows.start('f', { b: [1, 2], a: 1 }, { id: 'same' })).resolves.toEqual({ id: 'same', status: 'Running', created: false });
    await expect(h.flows.start('f', { a: 2 }, { id: 'same' })).rejects.toMatchObject({ name: 'FlowIdConflictError', message: "flow run id 'same' is taken: it was started with other input" });
    await expect(h.flows.start('g', { a: 1, b: [1, 2] }, { id: 'same' })).rejects.toMatchObject({ name: 'FlowIdConflictError' });
    expect(h.jobs.size).toBe(1);
    await h.run(0);
    await expect(h.flows.start('f', { a: 1, b: [1, 2] }, { id: 'same' })).resolves.toEqual({ id: 'same', status: 'Succeeded', created: false });
  });

  it('refuses an unknown flow and a bad id before publishing anything', async () => {
    const h = new FlowHarness();
    h.registry.register('known', async () => 1);
    await expect(h.flows.start('unknown', null)).rejects.toMatchObject({ name: 'UnknownFlowError', message: "no flow is registered under the name 'unknown' (registered: known)" });
    await expect(h.flows.start('known', null, { id: 'a/b' })).rejects.toMatchObject({ name: 'FlowIdError' });
    expect(h.jobs.size).toBe(0);
  });

  it('generates a UUID id when none is given', async () => {
    const h = new FlowHarness();
    h.registry.register('f', async () => 1);
    const { id } = await h.flows.start('f', undefined);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await h.state(id)).inputJson).toBe('null');
  });

  it('registry: names are checked and unique', async () => {
    const h = new FlowHarness();
    h.registry.register('a.b_c-1', async () => 1);
    expect(() => h.registry.register('a.b_c-1', async () => 1)).toThrow(/already registered/);
    expect(() => h.registry.register('has space', async () => 1)).toThrow(/must be 1-100 characters/);
    expect(h.registry.names()).toEqual(['a.b_c-1']);
  });
});
