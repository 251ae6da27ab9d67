// Reading app settings: a blank value is an unset one; a value out of range is a problem (collected, so start-up
// names every bad setting at once) and its default is used meanwhile.

export type { Env } from '../env';
import type { Env } from '../env';

export type Str = (name: string) => string | undefined;
export type Num = (name: string, def: number, opts?: { min?: number; max?: number; integer?: boolean }) => number;
export type Bool = (name: string, def: boolean) => boolean;
export interface Readers {
  str: Str;
  num: Num;
  bool: Bool;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n- ${problems.join('\n- ')}`);
    this.name = 'ConfigError';
  }
}

/** Readers of `env` that add what is wrong to `problems`. */
export function readers(env: Env, problems: string[]): Readers {
  const str = (name: string) => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const num = (name: string, def: number, opts: { min?: number; max?: number; integer?: boolean } = {}) => {
    const raw = str(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    const { min = 0, max = Number.MAX_SAFE_INTEGER, integer = false } = opts;
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      problems.push(`${name}='${raw}' must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
      return def;
    }
    return n;
  };
  const bool = (name: string, def: boolean) => {
    const raw = str(name);
    if (raw === undefined) return def;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    problems.push(`${name}='${raw}' must be true or false`);
    return def;
  };
  return { str, num, bool };
}
