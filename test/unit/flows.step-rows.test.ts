// The stored form of a ledger (flows/step-rows.ts): which steps become rows, what a write sends, and how a read
// tells a torn or broken ledger from a good one.
import { describe, expect, it } from 'vitest';
import { FLOW_STATE_SCHEMA_VERSION, FlowStateUnreadableError, type FlowState, type FlowStepState } from '../../shared/flows/state';
import { FLOW_HEAD_WITH_ROWS_VERSION, ledgerRead, ledgerWrite, readUntorn, settled, TornLedgerRead, type StoredStepRow } from '../../shared/flows/step-rows';

const done = (r: string): FlowStepState => ({ completed: true, resultJson: r });
const waiting: FlowStepState = { pendingCorrelationId: 'k' };

function state(steps: Record<string, FlowStepState>, patch: Partial<FlowState> = {}): FlowState {
  return { schemaVersion: FLOW_STATE_SCHEMA_VERSION, revision: 3, flowId: 'f', flowName: 'n', inputJson: '{}', status: 'Running', createdAt: 'x', updatedAt: 'x', attempts: 1, steps, values: {}, ...patch };
}

const stored = (w: ReturnType<typeof ledgerWrite>, revision: number): StoredStepRow[] => w.rows.map((r) => ({ ...r, revision }));

describe('flow step rows', () => {
  it('only the leading completed steps become rows; a waiting step keeps the later ones in the head', () => {
    const w = ledgerWrite(state({ a: done('1'), b: done('2'), c: waiting, d: done('4') }));
    expect(w.rows.map((r) => [r.seq, r.name])).toEqual([[1, 'a'], [2, 'b']]);
    const head = JSON.parse(w.headJson) as FlowState;
    expect(head).toMatchObject({ schemaVersion: FLOW_HEAD_WITH_ROWS_VERSION, stepRows: 2, lastStepRow: 'b' });
    expect(Object.keys(head.steps)).toEqual(['c', 'd']);
  });

  it('a ledger with no completed prefix is written whole at version 1, the form earlier releases read', () => {
    const w = ledgerWrite(state({ a: waiting, b: done('2') }));
    expect(w.rows).toEqual([]);
    const head = JSON.parse(w.headJson) as FlowState;
    expect(head.schemaVersion).toBe(FLOW_STATE_SCHEMA_VERSION);
    expect(head.stepRows).toBeUndefined();
    expect(Object.keys(head.steps)).toEqual(['a', 'b']);
  });

  it('after a write is settled, the next one sends only the steps completed since', () => {
    const s = state({ a: done('1'), b: done('2') });
    const w1 = ledgerWrite(s);
    settled(s, w1);
    const next = { ...s, steps: { ...s.steps, c: done('3') } };
    expect(ledgerWrite(next).rows.map((r) => r.name)).toEqual(['c']);
    expect(ledgerWrite({ ...s }).rows).toEqual([]);
  });

  it('a cut prefix (the last row no longer where the head put it) rewrites every row', () => {
    const s = state({ a: done('1'), b: done('2'), c: done('3') });
    settled(s, ledgerWrite(s));
    const { c: _c, ...kept } = s.steps;
    const w = ledgerWrite({ ...s, steps: kept });
    expect(w.rows.map((r) => r.seq)).toEqual([1, 2]);
    expect(w.stepRows).toBe(2);
    // same count, another name at the last row's place
    const renamed = ledgerWrite({ ...s, steps: { a: done('1'), b: done('2'), x: done('9') } });
    expect(renamed.rows.map((r) => r.name)).toEqual(['a', 'b', 'x']);
  });

  it('a read joins rows and head in the ledger order, ignoring stale rows past the head count', () => {
    const s = state({ a: done('1'), b: done('2'), c: waiting });
    const w = ledgerWrite(s);
    const rows = [...stored(w, 3), { seq: 3, name: 'stale', json: '{}', revision: 1 }];
    const read = ledgerRead('f', w.headJson, 3, rows);
    expect(Object.keys(read.steps)).toEqual(['a', 'b', 'c']);
    expect(read.steps.b).toEqual(done('2'));
    expect(read.schemaVersion).toBe(FLOW_STATE_SCHEMA_VERSION);
    expect([read.stepRows, read.lastStepRow]).toEqual([2, 'b']);
  });

  it('a row missing, written after the head, or not the one the head names: a torn read; three of them: unreadable', async () => {
    const w = ledgerWrite(state({ a: done('1'), b: done('2') }));
    expect(() => ledgerRead('f', w.headJson, 3, stored(w, 3).slice(0, 1))).toThrow(TornLedgerRead);
    expect(() => ledgerRead('f', w.headJson, 3, stored(w, 4))).toThrow(TornLedgerRead);
    expect(() => ledgerRead('f', w.headJson, 3, stored(w, 3).map((r) => (r.seq === 2 ? { ...r, name: 'z' } : r)))).toThrow(TornLedgerRead);
    let reads = 0;
    await expect(
      readUntorn('f', async () => {
        reads++;
        return ledgerRead('f', w.headJson, 3, []);
      }),
    ).rejects.toThrow(FlowStateUnreadableError);
    expect(reads).toBe(3);
    let second = 0;
    expect(await readUntorn('f', async () => (++second < 2 ? ledgerRead('f', w.headJson, 3, []) : 'ok'))).toBe('ok');
  });

  it('a row that is not a JSON object is unreadable at once', () => {
    const w = ledgerWrite(state({ a: done('1') }));
    expect(() => ledgerRead('f', w.headJson, 3, [{ seq: 1, name: 'a', json: '[1]', revision: 3 }])).toThrow(FlowStateUnreadableError);
    expect(() => ledgerRead('f', w.headJson, 3, [{ seq: 1, name: 'a', json: '{', revision: 3 }])).toThrow(/malformed JSON/);
  });
});
