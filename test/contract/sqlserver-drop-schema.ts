// Drops a test schema on SQL Server (and Babelfish): each object the stores or migrations made in it, one statement
// per object (Babelfish's SELECT @s = @s + … keeps only the last row, so a concatenated batch dropped one), procedures
// and functions first (Babelfish refuses to drop a table or schema something still depends on), then the schema.
import type sql from 'mssql';

export async function dropSqlServerSchema(pool: sql.ConnectionPool, schema: string): Promise<void> {
  // foreign keys first: a table another one references cannot be dropped before it
  const keys = await pool.request().query(`SELECT OBJECT_NAME(parent_object_id) AS t, name FROM sys.foreign_keys WHERE schema_id = SCHEMA_ID(N'${schema}')`);
  for (const k of keys.recordset as Array<{ t: string; name: string }>) await pool.request().query(`ALTER TABLE [${schema}].[${k.t}] DROP CONSTRAINT [${k.name}]`);
  const objects = await pool.request().query(
    `SELECT CASE RTRIM(o.type) WHEN 'P' THEN N'PROCEDURE' WHEN 'V' THEN N'VIEW' WHEN 'U' THEN N'TABLE' WHEN 'SO' THEN N'SEQUENCE' ELSE N'FUNCTION' END AS kind, o.name
     FROM sys.objects AS o WHERE o.schema_id = SCHEMA_ID(N'${schema}') AND RTRIM(o.type) IN ('P', 'FN', 'IF', 'TF', 'V', 'U', 'SO')
     ORDER BY CASE RTRIM(o.type) WHEN 'U' THEN 2 WHEN 'SO' THEN 3 ELSE 1 END`,
  );
  for (const o of objects.recordset as Array<{ kind: string; name: string }>) await pool.request().query(`DROP ${o.kind} [${schema}].[${o.name}]`);
  await pool.request().query(`IF SCHEMA_ID(N'${schema}') IS NOT NULL EXEC (N'DROP SCHEMA [${schema}]');`);
}
