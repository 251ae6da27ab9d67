// `npm start` must be one node process that receives npm's forwarded signals (POSIX: `exec` replaces the shell
// npm runs the script in) and must still run on Windows, where npm runs scripts through cmd.exe, which has no exec
// and resolves `exec` to exec.cmd in the project folder.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '../..');

describe('npm start', () => {
  it('execs node on POSIX shells; on cmd.exe exec.cmd runs the same command line', () => {
    const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
    expect(start).toMatch(/^exec node scripts\/start\.js$/);
    const cmd = readFileSync(join(root, 'exec.cmd'), 'utf8').split(/\r\n/);
    // every line a comment or the one command: run the arguments as given, without echoing them
    expect(cmd.filter((l) => l !== '' && !l.startsWith('@rem '))).toEqual(['@%*']);
    expect(readFileSync(join(root, 'exec.cmd'), 'utf8')).not.toMatch(/[^\r]\n/); // CRLF, as cmd.exe expects
  });
});
