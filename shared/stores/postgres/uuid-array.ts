/**
 * The ids (or lock ids) of a settlement batch as one array literal, `{a,b,…}`, sent as a single text parameter for a
 * `$n::uuid[]`. The pg driver would quote and escape each element of a JS array (two regex replaces and a string
 * per element: with the lock ids, 6–7 % of the keyed drain's Node CPU in bench/peers). A canonical uuid (36
 * characters of hex digits and dashes) needs neither quotes nor escapes; anything else in the list (a caller's
 * malformed id) goes as the array, for the driver to escape and the server to refuse as before.
 */
const UUID_LIST = /^[0-9A-Fa-f-]{36}(?:,[0-9A-Fa-f-]{36})*$/;

export function uuidArray(values: readonly string[]): string | readonly string[] {
  if (values.length === 0) return values;
  const joined = values.join(',');
  // 36-character blocks between the commas and no character more: every element is one such block (an element with a
  // comma in it would show as more blocks, or a longer string, than elements)
  return joined.length === values.length * 37 - 1 && UUID_LIST.test(joined) ? `{${joined}}` : values;
}

/** The (ids, lock ids) parameters of a settlement statement. */
export function settlementParams(settlements: ReadonlyArray<{ id: string; lockId: string }>): [string | readonly string[], string | readonly string[]] {
  const ids = new Array<string>(settlements.length);
  const lockIds = new Array<string>(settlements.length);
  for (let i = 0; i < settlements.length; i++) {
    ids[i] = settlements[i]!.id;
    lockIds[i] = settlements[i]!.lockId;
  }
  return [uuidArray(ids), uuidArray(lockIds)];
}
