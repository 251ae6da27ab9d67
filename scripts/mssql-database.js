// `node scripts/mssql-database.js`: waits (up to MSSQL_WAIT_SECONDS, default 180) until the SQL Server at
// MSSQL_CONNECTION_STRING accepts a login, then creates the connection string's database if it does not exist
// (the store creates schemas and tables, never the database). The CI workflow (.github/workflows/sqlserver.yml)
// runs it before the tests; test/compose.yml's healthcheck does the same with sqlcmd.
'use strict';
const sql = require('mssql');

async function main() {
  const cs = process.env.MSSQL_CONNECTION_STRING;
  if (!cs) throw new Error('MSSQL_CONNECTION_STRING is not set');
  const config = sql.ConnectionPool.parseConnectionString(cs);
  const database = config.database;
  if (!database) throw new Error('MSSQL_CONNECTION_STRING names no Database');
  const deadline = Date.now() + Number(process.env.MSSQL_WAIT_SECONDS ?? 180) * 1000;
  for (let attempt = 1; ; attempt++) {
    const pool = new sql.ConnectionPool({ ...config, database: 'master', connectionTimeout: 5000 });
    try {
      await pool.connect();
      await pool.request().input('name', sql.NVarChar(128), database)
        .query("IF DB_ID(@name) IS NULL BEGIN DECLARE @ddl nvarchar(300) = N'CREATE DATABASE ' + QUOTENAME(@name); EXEC (@ddl); END");
      const v = await pool.request().query("SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS v");
      console.log(`SQL Server ${v.recordset[0].v} answers (attempt ${attempt}); database ${database} exists`);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`SQL Server did not accept a login in time: ${err.message}`);
      await new Promise((r) => setTimeout(r, 2000));
    } finally {
      await pool.close().catch(() => undefined);
    }
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err.message);
    process.exit(1);
  },
);
