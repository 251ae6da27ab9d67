#!/usr/bin/env bash
# Step 3 of the deployment: creates (or verifies) the tables with `npm run schema -- apply`, as the deployer
# (Entra through DefaultAzureCredential, i.e. your az login); the app itself only verifies the schema.
# Used by infra/deploy.sh (the azd path runs the same CLI from infra/azd/hooks/predeploy.mjs).
#
# Environment: SQL_SERVER, SQL_DATABASE (the deployment's outputs), ANNOUNCE_QUEUE_URL (its output too, empty unless
# announceTSqlPublishes); SQL_SCHEMA and the table settings, if you changed them, must match the app settings.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=infra/scripts/common.sh
. infra/scripts/common.sh

: "${SQL_SERVER:?set SQL_SERVER (deployment output)}" "${SQL_DATABASE:?set SQL_DATABASE (deployment output)}"
need npm "comes with Node.js"
[[ -d node_modules ]] || npm ci --no-audit --no-fund
say "npm run schema -- apply on $SQL_SERVER/$SQL_DATABASE"
"${as_deployer[@]}" SQL_SERVER="$SQL_SERVER" SQL_DATABASE="$SQL_DATABASE" npm run schema -- apply
# Opt-in (main.bicep announceTSqlPublishes): the procedure a T-SQL publisher calls so its job starts within seconds,
# and the credential it signs with (the SQL server's identity). ANNOUNCE_QUEUE_URL is the deployment's output.
if [[ -n "${ANNOUNCE_QUEUE_URL:-}" ]]; then
  say "npm run schema -- announce on $SQL_SERVER/$SQL_DATABASE (queue $ANNOUNCE_QUEUE_URL)"
  "${as_deployer[@]}" SQL_SERVER="$SQL_SERVER" SQL_DATABASE="$SQL_DATABASE" npm run schema -- announce --queue-url "${ANNOUNCE_QUEUE_URL%/}"
fi
