// E2E_STORE=sqlserver runs the store-agnostic e2e files on the T-SQL engine of MSSQL_CONNECTION_STRING
// (app-harness.ts). On an engine without the UTF-8 collation (engine-gaps.ts, utf8Collation) the app refuses the
// engine at its version gate, as it refuses SQL Server 2016/2017: such tests are skipped with that reason.
import { beforeEach } from 'vitest';
import { e2eOnSqlServer } from './e2e/app-harness-store';

beforeEach(async (ctx) => {
  if (!e2eOnSqlServer()) return;
  const { gapReason, tdsEngine } = await import('./contract/engine-gaps');
  const reason = gapReason(await tdsEngine(), 'utf8Collation');
  if (!reason) return;
  console.warn(`[e2e:sqlserver] skipped: ${reason}`);
  ctx.skip(reason);
});
