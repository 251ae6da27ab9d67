#!/usr/bin/env bash
# azd postprovision hook (azure.yaml): clears the one-time signing secret from the azd environment, then runs the
# two deploy steps that need YOUR Entra identity between provisioning and the code deployment: the app
# identity's database user (infra/scripts/grant-app-identity.sh) and the schema (infra/scripts/apply-schema.sh).
# azd passes the deployment outputs (SQL_SERVER, SQL_DATABASE, APP_IDENTITY_NAME, APP_IDENTITY_CLIENT_ID) as
# environment variables.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=infra/scripts/common.sh
. infra/scripts/common.sh

[[ -z "${CALLBACK_SIGNING_SECRET:-}" ]] || azd env set CALLBACK_SIGNING_SECRET ""
infra/scripts/grant-app-identity.sh
infra/scripts/apply-schema.sh
