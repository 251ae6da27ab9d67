import { describe, expect, it } from 'vitest';
import { derivedName, transportNames, validateIdentifier, validateQueueName } from '../../shared/sql/identifiers';

describe('identifiers', () => {
  it('accepts simple identifiers up to the dialect cap and rejects the rest', () => {
    expect(validateIdentifier('dbo', 'Schema', 'sqlserver')).toBe('dbo');
    expect(() => validateIdentifier('a'.repeat(129), 'Table', 'sqlserver')).toThrow(/128/);
    expect(() => validateIdentifier('a'.repeat(64), 'Table', 'postgres')).toThrow(/63/);
    for (const bad of ['1abc', 'a-b', 'a b', '', 'a;drop', 'tä']) expect(() => validateIdentifier(bad, 'Table', 'sqlserver')).toThrow(/simple identifier/);
  });

  it('derives names by truncating the stem, never the suffix', () => {
    const m128 = 'm'.repeat(128);
    expect(derivedName(m128, '_expires_idx', 128)).toBe('m'.repeat(116) + '_expires_idx');
    expect(derivedName(m128, '_correlation_created_idx', 128)).toBe('m'.repeat(104) + '_correlation_created_idx');
    expect(derivedName(m128, '_ack_seq', 128)).toBe('m'.repeat(120) + '_ack_seq');
    expect(derivedName('jobs', '_ready_idx', 128)).toBe('jobs_ready_idx');
    expect(() => derivedName('x', '_'.repeat(10), 10)).toThrow();
    const pg = transportNames('public', 'm'.repeat(63), 'postgres');
    expect(pg.readyIndex).toBe('m'.repeat(44) + '_priority_ready_idx');
    expect(pg.legacyReadyIndex).toBe('m'.repeat(53) + '_ready_idx');
    expect(pg.createdIndex.length).toBe(63);
  });

  it('rejects a table name that collides with a derived name (case-insensitively)', () => {
    expect(() => transportNames('dbo', 'x', 'sqlserver')).not.toThrow();
    // a 128-char stem whose truncation equals another name cannot collide here, but equal names must be caught:
    expect(() => transportNames('dbo', 'a'.repeat(118) + '_ready_idx', 'sqlserver')).toThrow(/same name/);
  });

  it('queue names: ≤ 200 characters, no padding, no control characters', () => {
    expect(validateQueueName('worker')).toBeNull();
    expect(validateQueueName('w'.repeat(201))).toMatch(/200/);
    // lone surrogates have no UTF-8 form (topic copy ids hash the name's UTF-8 bytes in Node and in T-SQL: L3)
    expect(validateQueueName('orders\ud800')).toMatch(/lone surrogates/);
    expect(validateQueueName('\udc00orders')).toMatch(/lone surrogates/);
    expect(validateQueueName('orders-\ud83d\ude00')).toBeNull(); // a pair is fine
    expect(validateQueueName('worker ')).toMatch(/whitespace/);
    expect(validateQueueName('a\nb')).toMatch(/control/);
    expect(validateQueueName('')).toMatch(/empty/);
  });
});
