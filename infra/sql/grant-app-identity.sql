-- Grants the function app's user-assigned managed identity access to the queue database: a contained
-- database user with DATA roles only (db_datareader + db_datawriter). No DDL: the deployer creates the schema
-- with `npm run schema -- apply` and the app runs with AUTO_CREATE_SCHEMA=false (verify only).
--
-- Run it in the application database (not master) as the server's Microsoft Entra admin, with sqlcmd
-- variables (infra/deploy.sh does this):
--
--   sqlcmd -S <server>.database.windows.net -d <database> --authentication-method ActiveDirectoryDefault -b \
--     -v APP_IDENTITY_NAME=<identity name> APP_IDENTITY_CLIENT_ID=<identity client id> \
--     -i infra/sql/grant-app-identity.sql
--
-- Why WITH SID ... TYPE = E instead of FROM EXTERNAL PROVIDER: FROM EXTERNAL PROVIDER makes the server look
-- the principal up in Microsoft Entra ID, which needs the server identity to hold Directory Readers (or Graph
-- permissions). A managed identity's SID is its client (application) id as binary, so the user can be created
-- from the id alone, without any directory lookup. The user name is only a label; the SID is the identity.
--
-- Idempotent: running it again changes nothing. If a user with this name exists with ANOTHER SID (the identity
-- was deleted and recreated with the same name), the stale user is dropped and created again.

SET NOCOUNT ON;
SET XACT_ABORT ON;

DECLARE @name sysname = N'$(APP_IDENTITY_NAME)';
DECLARE @clientId uniqueidentifier = TRY_CONVERT(uniqueidentifier, N'$(APP_IDENTITY_CLIENT_ID)');

IF @clientId IS NULL
    THROW 50001, N'APP_IDENTITY_CLIENT_ID is not a GUID: pass the identity''s client id.', 1;
IF @name IS NULL OR LEN(@name) = 0
    THROW 50002, N'APP_IDENTITY_NAME is empty: pass the identity''s name.', 1;

-- uniqueidentifier -> varbinary(16) yields the byte order Entra SIDs use.
DECLARE @sid varbinary(16) = CAST(@clientId AS varbinary(16));
DECLARE @existing varbinary(85) = (SELECT sid FROM sys.database_principals WHERE name = @name);
DECLARE @sql nvarchar(max);
DECLARE @schemaName sysname = N'dbo'; -- the app's SQL_SCHEMA (its default); change both together

IF @existing IS NOT NULL AND @existing <> @sid
BEGIN
    PRINT N'User ' + QUOTENAME(@name) + N' belongs to another identity (stale SID): recreating it.';
    SET @sql = N'DROP USER ' + QUOTENAME(@name) + N';';
    EXEC sys.sp_executesql @sql;
    SET @existing = NULL;
END;

IF @existing IS NULL
BEGIN
    -- CREATE USER takes the SID as a literal, so the statement is built with the hex form (0x...).
    SET @sql = N'CREATE USER ' + QUOTENAME(@name) + N' WITH SID = ' + CONVERT(nvarchar(34), @sid, 1) + N', TYPE = E;';
    EXEC sys.sp_executesql @sql;
    PRINT N'Created contained user ' + QUOTENAME(@name) + N' for client id ' + CONVERT(nvarchar(36), @clientId) + N'.';
END;

-- Data roles only: read and write rows in every table of the database.
IF IS_ROLEMEMBER(N'db_datareader', @name) = 0
BEGIN
    SET @sql = N'ALTER ROLE db_datareader ADD MEMBER ' + QUOTENAME(@name) + N';';
    EXEC sys.sp_executesql @sql;
END;

IF IS_ROLEMEMBER(N'db_datawriter', @name) = 0
BEGIN
    SET @sql = N'ALTER ROLE db_datawriter ADD MEMBER ' + QUOTENAME(@name) + N';';
    EXEC sys.sp_executesql @sql;
END;

-- NEXT VALUE FOR on the channel's ack sequence needs UPDATE on the sequence; db_datawriter covers tables and
-- views, so grant it on the schema (a data right; it also covers a sequence created later by the schema step).
SET @sql = N'GRANT UPDATE ON SCHEMA::' + QUOTENAME(@schemaName) + N' TO ' + QUOTENAME(@name) + N';';
EXEC sys.sp_executesql @sql;

SELECT p.name AS [user], p.type_desc, CONVERT(nvarchar(34), p.sid, 1) AS sid, r.name AS [role]
FROM sys.database_principals AS p
LEFT JOIN sys.database_role_members AS m ON m.member_principal_id = p.principal_id
LEFT JOIN sys.database_principals AS r ON r.principal_id = m.role_principal_id
WHERE p.name = @name;
