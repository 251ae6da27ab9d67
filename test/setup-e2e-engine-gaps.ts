// E2E_STORE=sqlserver runs the store-agnostic e2e files on the T-SQL engine of MSSQL_CONNECTION_STRING
// (app-harness.ts). On an engine without the UTF-8 collation (engine-gaps.ts, utf8Collation) the app refuses the
// engine at its version gate, as it refuses SQL Server 2016/2017: such tests are skipped with that reason.
import { beforeEach } from 'vitest';
import { e2eStoreGap } from './e2e/app-harness-store';

beforeEach(async (ctx) => {
  const reason = await e2eStoreGap();
  if (!reason) return;
  console.warn(`[e2e:sqlserver] skipped: ${reason}`);
  ctx.skip(reason);
});
