// Statement rewrites the SQL Server contract harness applies on a T-SQL engine with a named gap (engine-gaps.ts), so
// that what surrounds the gap still runs there: the claims' predicates, parameters, OUTPUT columns, priority order,
// ordering-key heads and limit arithmetic. Each rewrite turns one construct the engine refuses into an equivalent
// form it runs; it touches nothing else, and the product's text stays as the shape tests pin it (the rewrite happens
// in the harness's pool, on that engine only). Each has a probe (engine-gaps.ts ENGINE_SHIMS) that runs the rewritten
// form on the connected engine and compares its outcome with SQL Server's.

/** How much the shimmed sequence steps per value (see rewriteNextValueForOver): more than any batch has rows. */
export const SHIM_SEQUENCE_INCREMENT = 1000;

/**
 * updateThroughCte. `WITH x AS (SELECT TOP (n) cols FROM t [AS a] WITH (hints) WHERE … ORDER BY …) UPDATE x SET …
 * [OUTPUT …];` (Microsoft's documented ordered UPDATE TOP) becomes `UPDATE t SET … [OUTPUT …] WHERE id IN (SELECT TOP
 * (n) id FROM t [AS a] WITH (hints) WHERE … ORDER BY …);`: the same rows (the first n in that order, by primary key),
 * the same SET and OUTPUT, the same hints on the read.
 */
export function rewriteCteUpdates(text: string): string {
  const cte =
    /^([ \t]*)WITH (\w+) AS \(\n[ \t]*SELECT TOP \(([^)]+)\) [\s\S]*?\bFROM (\S+)((?: AS \w+)?) WITH \(([^)]*)\)\n[ \t]*(WHERE [^\n]*)\n[ \t]*ORDER BY ([^\n]*)\)\n[ \t]*UPDATE \2\b([^;]*);/gm;
  return text.replace(cte, (_m, indent: string, _name: string, top: string, table: string, alias: string, hints: string, where: string, order: string, rest: string) => {
    const key = alias ? `${alias.replace(' AS ', '')}.id` : 'id';
    return (
      `${indent}UPDATE ${table}${rest}\n` +
      `${indent}WHERE id IN (SELECT TOP (${top}) ${key} FROM ${table}${alias} WITH (${hints}) ${where} ORDER BY ${order});`
    );
  });
}

/**
 * nextValueForOver. `NEXT VALUE FOR s OVER (ORDER BY e)` (one value per row, in e's order) becomes
 * `(SELECT NEXT VALUE FOR s) + ROW_NUMBER() OVER (ORDER BY e)`: the scalar subquery is evaluated once per statement
 * there (an init plan), so the rows get base + 1 … base + k in e's order; with the sequence stepping
 * SHIM_SEQUENCE_INCREMENT (rewriteShimmedSequence) those values lie between base and the next value anyone draws,
 * so they stay unique and ordered against every other row, as the product's values are.
 */
export function rewriteNextValueForOver(text: string): string {
  return text.replace(/NEXT VALUE FOR ((?:\[[^\]]+\]\.)?\[[^\]]+\]) OVER \((ORDER BY [^)]*)\)/g, '((SELECT NEXT VALUE FOR $1) + ROW_NUMBER() OVER ($2))');
}

/** The sequence the ready set creates, stepping SHIM_SEQUENCE_INCREMENT on that engine (for rewriteNextValueForOver). */
export function rewriteShimmedSequence(text: string): string {
  return text.replace(/(CREATE SEQUENCE \S+ AS bigint START WITH 1) INCREMENT BY 1;/g, `$1 INCREMENT BY ${SHIM_SEQUENCE_INCREMENT};`);
}

/**
 * openJsonStringValues. The engine returns a string value of OPENJSON … WITH (c nvarchar(…) '$.c') in its JSON form
 * (escapes kept: \" for ", \\ for \, \n for a line feed, \u0001 …). `OPENJSON(x) WITH (…) AS a` becomes
 * `(SELECT <each column; a string one decoded> FROM OPENJSON(x) WITH (…) AS shim_raw) AS a`: the decoding undoes
 * exactly JSON's escapes (\\ first, through a private-use stand-in, so \\n stays a backslash and an n).
 */
export function rewriteOpenJsonStrings(text: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const start = text.indexOf('OPENJSON(', at);
    if (start < 0) break;
    const argEnd = matching(text, start + 'OPENJSON'.length);
    const withMatch = /^ WITH \(/.exec(text.slice(argEnd + 1));
    if (!withMatch) {
      out += text.slice(at, argEnd + 1);
      at = argEnd + 1;
      continue;
    }
    const colsOpen = argEnd + 1 + withMatch[0].length - 1;
    const colsClose = matching(text, colsOpen);
    const aliasMatch = /^ AS (\w+)/.exec(text.slice(colsClose + 1));
    const columns = splitTopLevel(text.slice(colsOpen + 1, colsClose)).map((c) => c.trim().split(/\s+/));
    if (!aliasMatch || !columns.some((c) => /^n?varchar/i.test(c[1] ?? ''))) {
      out += text.slice(at, colsClose + 1);
      at = colsClose + 1;
      continue;
    }
    const projection = columns
      .map(([name, type]) => (/^n?varchar/i.test(type ?? '') ? `${decodeJsonString(`shim_raw.${name}`)} AS ${name}` : `shim_raw.${name}`))
      .join(', ');
    out += `${text.slice(at, start)}(SELECT ${projection} FROM ${text.slice(start, colsClose + 1)} AS shim_raw) AS ${aliasMatch[1]}`;
    at = colsClose + 1 + aliasMatch[0].length;
  }
  return out + text.slice(at);
}

/** JSON's string escapes undone, compared by code unit (BIN2). */
export function decodeJsonString(expression: string): string {
  const BACKSLASH = 'NCHAR(57344)';
  const pairs: Array<[string, string]> = [
    [`N'\\"'`, `N'"'`],
    [`N'\\/'`, `N'/'`],
    [`N'\\b'`, 'NCHAR(8)'],
    [`N'\\f'`, 'NCHAR(12)'],
    [`N'\\n'`, 'NCHAR(10)'],
    [`N'\\r'`, 'NCHAR(13)'],
    [`N'\\t'`, 'NCHAR(9)'],
    ...Array.from({ length: 31 }, (_, i) => i + 1)
      .filter((c) => ![8, 9, 10, 12, 13].includes(c))
      .map((c): [string, string] => [`N'\\u${c.toString(16).padStart(4, '0')}'`, `NCHAR(${c})`]),
    [BACKSLASH, `N'\\'`],
  ];
  let e = `REPLACE(${expression} COLLATE Latin1_General_100_BIN2, N'\\\\', ${BACKSLASH})`;
  for (const [from, to] of pairs) e = `REPLACE(${e}, ${from}, ${to})`;
  return e;
}

/**
 * rowcountAfterOutput. The engine reports 0 rows for a statement whose OUTPUT goes to the client, so a row count read
 * right after a claim (`SET @x = @@ROWCOUNT;` after `UPDATE t … lock_id = @lock_id … OUTPUT …`) is read as the
 * count of the rows leased under the claim's lock id instead: every row that claim took, and only those (the lock
 * id is fresh per claim).
 */
export function rewriteRowcountAfterOutput(text: string): string {
  return text.replace(
    /(UPDATE (\[[^\]]+\]\.\[[^\]]+\])\n[ \t]*SET [^\n]*lock_id = @lock_id\n[ \t]*OUTPUT [^;]*;\n)([ \t]*)SET (@\w+) = @@ROWCOUNT;/g,
    (_m, statement: string, table: string, indent: string, variable: string) =>
      `${statement}${indent}SET ${variable} = (SELECT COUNT(*) FROM ${table} WHERE lock_id = @lock_id);`,
  );
}

/**
 * nocountPersists. On SQL Server a SET inside a request (mssql sends each through sp_executesql) ends with it; the
 * engine keeps SET NOCOUNT ON for the session's later requests, where it then drops an UPDATE's OUTPUT rows. A batch
 * that turns NOCOUNT on (not a CREATE …, whose body must open its batch) gets `SET NOCOUNT OFF;` at its end: the scope
 * SQL Server gives it.
 */
export function rewriteNocountScope(text: string): string {
  if (!/\bSET NOCOUNT ON\b/.test(text) || /^\s*CREATE\b/i.test(text)) return text;
  return `${text.replace(/\s+$/, '')}\nSET NOCOUNT OFF;`;
}

/**
 * outputExpressionInto. An UPDATE's `OUTPUT <expression over inserted.…> INTO @v` (the renewal's cancel-marker test)
 * becomes `OUTPUT inserted.id INTO @v_shim_ids`, and right after the statement `INSERT INTO @v SELECT <the
 * expression over the row> FROM @v_shim_ids JOIN t ON id`: the same rows, the expression read from each row as the
 * UPDATE left it.
 */
export function rewriteOutputExpressionInto(text: string): string {
  const re = /^([ \t]*)UPDATE (\[[^\]]+\]\.\[[^\]]+\])\n((?:(?![ \t]*OUTPUT )[^\n]*\n)*?)([ \t]*)OUTPUT ((?:(?! INTO @).)*\binserted\.(?:(?! INTO @).)*) INTO (@\w+)\n([^;]*;)/m;
  const m = re.exec(text);
  if (!m) return text;
  const [whole, indent, table, set, outIndent, expression, target, rest] = m as unknown as [string, string, string, string, string, string, string, string];
  if (/^inserted\.\w+$/.test(expression.trim())) return text; // a plain column: the engine runs it
  const ids = `${target}_shim_ids`;
  const replaced =
    `${indent}DECLARE ${ids} TABLE (id uniqueidentifier NOT NULL);\n` +
    `${indent}UPDATE ${table}\n${set}${outIndent}OUTPUT inserted.id INTO ${ids}\n${rest}\n` +
    `${indent}INSERT INTO ${target} SELECT ${expression.replace(/\binserted\./g, 'shim_row.')} FROM ${ids} AS shim_id INNER JOIN ${table} AS shim_row ON shim_row.id = shim_id.id;`;
  return text.replace(whole, replaced);
}

/**
 * convertStyle127. `CONVERT(nvarchar(n), x, 127)` and style 126 get their space back to ISO 8601's T:
 * `REPLACE(CONVERT(…), N' ', N'T')` (127: the cancel marker's time; 126: the history cursor's key).
 */
export function rewriteConvertStyle127(text: string): string {
  return text.replace(/CONVERT\((nvarchar\(\d+\)), ([^,()]+(?:\(\))?), (126|127)\)/g, "REPLACE(CONVERT($1, $2, $3), N' ', N'T')");
}

/** Index of the parenthesis closing the one at `open`. */
function matching(text: string, open: number): number {
  let depth = 0;
  let quoted = false;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') depth++;
    else if (!quoted && c === ')' && --depth === 0) return i;
  }
  throw new Error(`no closing parenthesis for the one at ${open}`);
}

function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let from = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') depth++;
    else if (!quoted && c === ')') depth--;
    else if (!quoted && depth === 0 && c === ',') {
      parts.push(list.slice(from, i));
      from = i + 1;
    }
  }
  parts.push(list.slice(from));
  return parts.filter((p) => p.trim() !== '');
}

/**
 * executeAsOwner. `WITH EXECUTE AS OWNER` on a procedure (the announce: its callers need EXECUTE on it only) is refused
 * there; the procedure is created without the clause. The test connects as the procedure's owner, so it runs with the
 * same rights either way.
 */
export function rewriteExecuteAsOwner(text: string): string {
  return text.replace(/^WITH EXECUTE AS OWNER\n/m, '');
}

/** The session-context key the harness numbers each transaction under (currentTransactionId). */
export const SHIM_TRANSACTION_KEY = 'shim.transaction';

/**
 * currentTransactionId. `CURRENT_TRANSACTION_ID()` does not exist there (nor sys.dm_tran_current_transaction). It becomes
 * `SESSION_CONTEXT(N'shim.transaction')`, a number the harness sets afresh right after each BEGIN TRANSACTION it sends
 * (shimTransactionStart): the same within a transaction, another in the next one, as the function's value is.
 */
export function rewriteCurrentTransactionId(text: string): string {
  return text.replace(/CURRENT_TRANSACTION_ID\(\)/g, `SESSION_CONTEXT(N'${SHIM_TRANSACTION_KEY}')`);
}

/** What the harness sends right after BEGIN TRANSACTION on that engine: a fresh number for the transaction. */
export function shimTransactionStart(): string {
  const id = `${Date.now()}${Math.floor(Math.random() * 1e6)}`.slice(0, 19);
  return `EXEC sys.sp_set_session_context @key = N'${SHIM_TRANSACTION_KEY}', @value = N'${id}';`;
}

/**
 * createOrAlter. `CREATE OR ALTER PROCEDURE` is a syntax error there. It becomes `CREATE PROCEDURE`: the same when the
 * procedure does not exist yet, which is how the harness creates it (once, in a fresh schema); a second creation fails
 * there instead of altering.
 */
export function rewriteCreateOrAlter(text: string): string {
  return text.replace(/^CREATE OR ALTER PROCEDURE /m, 'CREATE PROCEDURE ');
}
