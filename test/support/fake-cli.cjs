// A stand-in for az, azd, sqlcmd, npm and node in the hook tests (test/support/hook-harness.ts writes one shell
// wrapper per name that execs this file). It appends {cmd, args, env} to $FAKE_CLI_LOG (one JSON line per call) and
// answers from the rules in $FAKE_CLI_RULES: the first rule whose `cmd` matches and whose `args` are a prefix of
// the call's arguments (a rule with `contains` also needs those tokens somewhere). `times` limits how often a rule
// answers (then the next matching rule answers). No rule: exit 0, no output.
'use strict';
const fs = require('node:fs');

const [cmd, ...args] = process.argv.slice(2);
const logFile = process.env.FAKE_CLI_LOG;
const rulesFile = process.env.FAKE_CLI_RULES;
const seen = ['AZURE_CLIENT_ID', 'AZURE_CLIENT_SECRET', 'DATABASE_URL', 'SQL_SERVER', 'SQL_DATABASE', 'NODE_PATH'];
const env = Object.fromEntries(seen.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));
fs.appendFileSync(logFile, `${JSON.stringify({ cmd, args, env })}\n`);

const rules = JSON.parse(fs.readFileSync(rulesFile, 'utf8'));
const countsFile = `${rulesFile}.counts`;
const counts = fs.existsSync(countsFile) ? JSON.parse(fs.readFileSync(countsFile, 'utf8')) : {};
const index = rules.findIndex(
  (r, i) =>
    r.cmd === cmd &&
    (r.args ?? []).every((a, k) => args[k] === a) &&
    (r.contains ?? []).every((a) => args.includes(a)) &&
    (r.times === undefined || (counts[i] ?? 0) < r.times),
);
if (index >= 0) {
  counts[index] = (counts[index] ?? 0) + 1;
  fs.writeFileSync(countsFile, JSON.stringify(counts));
  const r = rules[index];
  if (r.stdout) process.stdout.write(r.stdout);
  if (r.stderr) process.stderr.write(r.stderr);
  process.exit(r.status ?? 0);
}
