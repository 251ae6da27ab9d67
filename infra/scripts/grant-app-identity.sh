#!/usr/bin/env bash
# Step 2 of the deployment: gives the app's managed identity its database user (data roles only) by running
# infra/sql/grant-app-identity.sql as the deployer (the server's Entra admin or a member of the admin group).
# Used by infra/deploy.sh (the azd postprovision hook, infra/azd/hooks/postprovision.mjs, runs the same SQL file).
#
# Environment: SQL_SERVER, SQL_DATABASE, APP_IDENTITY_NAME, APP_IDENTITY_CLIENT_ID (the deployment's outputs).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=infra/scripts/common.sh
. infra/scripts/common.sh

: "${SQL_SERVER:?set SQL_SERVER (deployment output)}" "${SQL_DATABASE:?set SQL_DATABASE (deployment output)}"
: "${APP_IDENTITY_NAME:?set APP_IDENTITY_NAME (deployment output)}" "${APP_IDENTITY_CLIENT_ID:?set APP_IDENTITY_CLIENT_ID (deployment output)}"
[[ "$APP_IDENTITY_NAME" =~ ^[A-Za-z0-9_.-]+$ ]] || die "unexpected identity name '$APP_IDENTITY_NAME'"
[[ "$APP_IDENTITY_CLIENT_ID" =~ ^[0-9a-fA-F-]{36}$ ]] || die "unexpected client id '$APP_IDENTITY_CLIENT_ID'"
need_go_sqlcmd

say "granting $APP_IDENTITY_NAME db_datareader + db_datawriter in $SQL_DATABASE"
for attempt in 1 2 3 4 5; do
  # A new firewall rule or a resuming serverless database can refuse the first connections.
  if "${as_deployer[@]}" sqlcmd -S "tcp:$SQL_SERVER,1433" -d "$SQL_DATABASE" \
    --authentication-method ActiveDirectoryDefault -b \
    -v "APP_IDENTITY_NAME=$APP_IDENTITY_NAME" -v "APP_IDENTITY_CLIENT_ID=$APP_IDENTITY_CLIENT_ID" \
    -i infra/sql/grant-app-identity.sql; then
    exit 0
  fi
  [[ $attempt -lt 5 ]] || die "the grant failed 5 times (firewall? are you the server's Entra admin?)"
  echo "retrying in 20 s ..."; sleep 20
done
