import { describe, expect, it } from 'vitest';
import { correlationIdProblem } from '../../shared/correlation-id';

describe('correlation-id rules', () => {
  it('accepts ordinary ids, supplementary characters and exactly 400 UTF-16 units', () => {
    for (const ok of ['c1', 'Order-42/step 3', 'emoji-\u{1F600}', 'x'.repeat(400), 'a b']) expect(correlationIdProblem(ok)).toBeNull();
  });
  it('rejects what SQL Server padding, length or encoding would break', () => {
    expect(correlationIdProblem('x'.repeat(401))).toMatch(/401/);
    expect(correlationIdProblem(' lead')).toMatch(/whitespace/);
    expect(correlationIdProblem('trail ')).toMatch(/whitespace/);
    expect(correlationIdProblem('tab\there')).toMatch(/control/);
    expect(correlationIdProblem('lone\uD800')).toMatch(/UTF-16/);
    expect(correlationIdProblem('\uDC00x')).toMatch(/UTF-16/);
    expect(correlationIdProblem('')).toMatch(/empty/);
    expect(correlationIdProblem(42)).toMatch(/string/);
  });
});
