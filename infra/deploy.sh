#!/usr/bin/env bash
# Deploys asyncresponse-functions to Azure, end to end:
#   1. infrastructure    az deployment group create (infra/main.bicep)
#   2. database access   sqlcmd runs infra/sql/grant-app-identity.sql as the Entra admin (you)
#   3. schema            npm run schema -- apply, as you (Entra, DefaultAzureCredential = your az login)
#   4. code              build, package with production node_modules, az functionapp deployment source config-zip
#   5. check             GET /api/health, then prints a publish example (and the command that reads the key)
# Around them: creates the resource group only when `az group exists` says it does not (creating an existing group
# again clears its tags), refuses one in another region, registers Microsoft.Web and Microsoft.App, learns the
# names of the SQL server and Key Vault the deployment will use (infra/modules/names.bicep) to keep an existing
# server's Entra admin and signing secret, and after step 4 waits for the CALLBACK_SIGNING_SECRET Key Vault
# reference to resolve (restarting the app; up to ~13 min, then only a warning).
#
# Usage:  AZURE_RESOURCE_GROUP=rg-asyncresp AZURE_LOCATION=swedencentral infra/deploy.sh [--skip-infra]
#           [--skip-grant] [--skip-schema] [--skip-code]
#
# Environment (AZURE_RESOURCE_GROUP is required; AZURE_LOCATION too unless --skip-infra):
#   AZURE_RESOURCE_GROUP       resource group (created when missing; an existing one is left as it is, tags too)
#   AZURE_LOCATION             region with Flex Consumption (az functionapp list-flexconsumption-locations)
#   SQL_ADMIN_LOGIN            Entra admin of the SQL server    (default: an existing server's admin, else your
#                              signed-in user's UPN; set it with SQL_ADMIN_OBJECT_ID to change the admin)
#   SQL_ADMIN_OBJECT_ID        its object id                    (default: your signed-in user's object id)
#   SQL_ADMIN_PRINCIPAL_TYPE   User | Group | Application       (default: User)
#   DEPLOYER_IP                public IPv4 admitted by the SQL firewall for steps 2-3 (default: looked up)
#   NAME_PREFIX                resource name prefix             (default: the parameters file's, asyncresp)
#   QUEUES, CALLBACK_ALLOWED_HOSTS, WORKER_FORWARD_URL, ALERT_EMAIL   app/alert parameters (default: file's)
#   CALLBACK_SIGNING_SECRET    sets/rotates the signing secret; unset = keep the stored one, or generate one
#                              on the first deployment
#   PARAMETERS_FILE            default infra/main.parameters.json
#
# Prerequisites: az (logged in: az login; az installs Bicep itself), go-sqlcmd (github.com/microsoft/go-sqlcmd: the
# ODBC sqlcmd has no --authentication-method, and the script refuses it), node 20+/npm, zip, curl.
set -euo pipefail

cd "$(dirname "$0")/.."

skip_infra=0 skip_grant=0 skip_schema=0 skip_code=0
for arg in "$@"; do
  case "$arg" in
    --skip-infra) skip_infra=1 ;;
    --skip-grant) skip_grant=1 ;;
    --skip-schema) skip_schema=1 ;;
    --skip-code) skip_code=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;p;}' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

# shellcheck source=infra/scripts/common.sh
. infra/scripts/common.sh
# shellcheck source=infra/scripts/existing.sh
. infra/scripts/existing.sh

need az "https://learn.microsoft.com/cli/azure/install-azure-cli"
need node "Node.js 20 or later"
need npm "comes with Node.js"
[[ $skip_grant -eq 1 ]] || need_go_sqlcmd
[[ $skip_code -eq 1 ]] || need zip "apt-get install zip / brew install zip"
need curl "used for the health check"

: "${AZURE_RESOURCE_GROUP:?set AZURE_RESOURCE_GROUP}"
RG="$AZURE_RESOURCE_GROUP"
PARAMETERS_FILE="${PARAMETERS_FILE:-infra/main.parameters.json}"
[[ -f "$PARAMETERS_FILE" ]] || die "no parameters file $PARAMETERS_FILE"

az account show --query id -o tsv >/dev/null 2>&1 || die "not logged in: run az login"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
outputs="$work/outputs.json"

# Reads one output of the deployment (matched case-insensitively: ARM does not promise to keep the case).
out() {
  # shellcheck disable=SC2016 # a JavaScript template literal, not shell
  node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const k = Object.keys(o).find((n) => n.toLowerCase() === process.argv[2].toLowerCase());
    if (k === undefined) { console.error(`deployment output ${process.argv[2]} is missing`); process.exit(3); }
    process.stdout.write(String(o[k].value));' "$outputs" "$1"
}

# ---------------------------------------------------------------------------------------------------------
# 1. Infrastructure
# ---------------------------------------------------------------------------------------------------------
if [[ $skip_infra -eq 0 ]]; then
  : "${AZURE_LOCATION:?set AZURE_LOCATION (a region that offers Flex Consumption)}"
  # Resources go to the group's region: an existing group elsewhere would put them in a region without Flex.
  # `az group create` on an existing group replaces its tags (a PUT), which breaks tag policies: create only a
  # missing group. (lower-cased with tr: macOS ships bash 3.2, which has no ${var,,})
  wanted_location="$(printf '%s' "$AZURE_LOCATION" | tr -d ' ' | tr '[:upper:]' '[:lower:]')"
  if [[ "$(az group exists --name "$RG")" == "true" ]]; then
    existing_location="$(az group show --name "$RG" --query location -o tsv | tr '[:upper:]' '[:lower:]')"
    if [[ "$existing_location" != "$wanted_location" ]]; then
      die "resource group $RG already exists in $existing_location, not $AZURE_LOCATION; use that region or another group"
    fi
    say "resource group $RG (exists, left as it is)"
  else
    say "creating resource group $RG in $AZURE_LOCATION"
    az group create --name "$RG" --location "$AZURE_LOCATION" --output none
  fi

  # Flex Consumption needs Microsoft.App as well as Microsoft.Web; ARM only registers what the template names.
  for namespace in Microsoft.Web Microsoft.App; do
    if [[ "$(az provider show --namespace "$namespace" --query registrationState -o tsv 2>/dev/null)" != "Registered" ]]; then
      say "registering the resource provider $namespace"
      az provider register --namespace "$namespace" --wait
    fi
  done

  # The exact SQL server and Key Vault this deployment uses (never "the first one in the group").
  prefix="${NAME_PREFIX:-$(node -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).parameters;
    process.stdout.write(String(p.namePrefix?.value ?? "asyncresp"))' "$PARAMETERS_FILE")}"
  say "looking up the SQL server and Key Vault of prefix '$prefix'"
  inspect_existing "$RG" "$prefix" "$work"

  # Azure applies the server's admin block only when the server is created; an existing server gets its admin
  # through a child resource (infra/modules/sql.bicep). Without SQL_ADMIN_* that is the admin it already has.
  if [[ -z "${SQL_ADMIN_OBJECT_ID:-}" && -n "$admin_sid" ]]; then
    SQL_ADMIN_OBJECT_ID="$admin_sid"
    SQL_ADMIN_LOGIN="$admin_login"
    SQL_ADMIN_PRINCIPAL_TYPE="${admin_type:-${SQL_ADMIN_PRINCIPAL_TYPE:-User}}"
    say "SQL Entra admin: keeping $SQL_ADMIN_LOGIN ($SQL_ADMIN_PRINCIPAL_TYPE) of $sql_server_name; the grant and schema steps need you to be it or in it"
  elif [[ -n "${SQL_ADMIN_OBJECT_ID:-}" && -n "$admin_sid" && "$SQL_ADMIN_OBJECT_ID" != "$admin_sid" ]]; then
    say "SQL Entra admin of $sql_server_name: changing $admin_login to ${SQL_ADMIN_LOGIN:-?} (SQL_ADMIN_OBJECT_ID)"
  fi
  if [[ -z "${SQL_ADMIN_OBJECT_ID:-}" ]]; then
    say "SQL Entra admin: the signed-in user"
    SQL_ADMIN_OBJECT_ID="$(az ad signed-in-user show --query id -o tsv)" ||
      die "could not read the signed-in user; set SQL_ADMIN_LOGIN, SQL_ADMIN_OBJECT_ID and SQL_ADMIN_PRINCIPAL_TYPE"
    SQL_ADMIN_LOGIN="${SQL_ADMIN_LOGIN:-$(az ad signed-in-user show --query userPrincipalName -o tsv)}"
  fi
  : "${SQL_ADMIN_LOGIN:?set SQL_ADMIN_LOGIN with SQL_ADMIN_OBJECT_ID}"

  if [[ -z "${DEPLOYER_IP:-}" ]]; then
    DEPLOYER_IP="$(curl -fsS --max-time 10 https://api.ipify.org 2>/dev/null || true)"
    [[ -n "$DEPLOYER_IP" ]] || echo "warning: could not find your public IP; set DEPLOYER_IP or the grant/schema steps may be refused by the SQL firewall" >&2
  fi

  params=(--parameters "@$PARAMETERS_FILE"
    --parameters "sqlAdminLogin=$SQL_ADMIN_LOGIN" "sqlAdminObjectId=$SQL_ADMIN_OBJECT_ID"
    "sqlAdminPrincipalType=${SQL_ADMIN_PRINCIPAL_TYPE:-User}" "sqlServerExists=$sql_server_exists"
    "deployerIpAddress=${DEPLOYER_IP:-}")
  params+=(--parameters "namePrefix=$prefix")
  [[ -n "${QUEUES:-}" ]] && params+=(--parameters "queues=$QUEUES")
  [[ -n "${CALLBACK_ALLOWED_HOSTS:-}" ]] && params+=(--parameters "callbackAllowedHosts=$CALLBACK_ALLOWED_HOSTS")
  [[ -n "${WORKER_FORWARD_URL:-}" ]] && params+=(--parameters "workerForwardUrl=$WORKER_FORWARD_URL")
  [[ -n "${ALERT_EMAIL:-}" ]] && params+=(--parameters "alertEmail=$ALERT_EMAIL")

  # The signing secret goes through a private parameters file, never the command line.
  secret="${CALLBACK_SIGNING_SECRET:-}"
  # Only a definite "not found" (existing.sh) creates a secret: generating one by mistake would rotate the key
  # that callback receivers verify signatures with.
  if [[ -z "$secret" && "$signing_secret_exists" != "true" ]]; then
    say "generating CALLBACK_SIGNING_SECRET (first deployment); it is stored in Key Vault $key_vault_name only"
    secret="$(node -e 'process.stdout.write(require("crypto").randomBytes(48).toString("base64"))')"
  fi
  if [[ -n "$secret" ]]; then
    # shellcheck disable=SC2016 # "$schema" is a JSON key, not a shell variable
    # (through the environment: an argument would show in ps)
    (umask 077 && SIGNING_SECRET="$secret" node -e 'process.stdout.write(JSON.stringify({ "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#",
      contentVersion: "1.0.0.0", parameters: { callbackSigningSecret: { value: process.env.SIGNING_SECRET } } }))' >"$work/secret.parameters.json")
    params+=(--parameters "@$work/secret.parameters.json")
  fi
  unset secret

  say "deploying infra/main.bicep (a few minutes)"
  az deployment group create --resource-group "$RG" --name "asyncresponse-$(date -u +%Y%m%d%H%M%S)" \
    --template-file infra/main.bicep "${params[@]}" --query properties.outputs --output json >"$outputs"
else
  say "reading the outputs of the latest deployment in $RG"
  last="$(az deployment group list -g "$RG" --query "sort_by([?starts_with(name, 'asyncresponse-') && properties.provisioningState=='Succeeded'], &properties.timestamp)[-1].name" -o tsv)"
  [[ -n "$last" ]] || die "no successful asyncresponse-* deployment in $RG; run without --skip-infra first"
  az deployment group show -g "$RG" -n "$last" --query properties.outputs --output json >"$outputs"
fi

APP="$(out FUNCTION_APP_NAME)"
APP_HOST="$(out FUNCTION_APP_HOST)"
SQL_SERVER_FQDN="$(out SQL_SERVER)"
SQL_DATABASE_NAME="$(out SQL_DATABASE)"
APP_IDENTITY_NAME="$(out APP_IDENTITY_NAME)"
APP_IDENTITY_CLIENT_ID="$(out APP_IDENTITY_CLIENT_ID)"
ANNOUNCE_QUEUE_URL="$(out ANNOUNCE_QUEUE_URL)" # empty unless announceTSqlPublishes (the schema step then runs `schema -- announce`)
echo "function app $APP ($APP_HOST), database $SQL_DATABASE_NAME on $SQL_SERVER_FQDN, identity $APP_IDENTITY_NAME"


# ---------------------------------------------------------------------------------------------------------
# 2. The app identity's database user (data roles only)   infra/scripts/grant-app-identity.sh
# 3. Schema (DDL as the deployer; the app only verifies it)  infra/scripts/apply-schema.sh
# (azd: the same SQL file and schema CLI, from infra/azd/hooks/postprovision.mjs and predeploy.mjs)
# ---------------------------------------------------------------------------------------------------------
export SQL_SERVER="$SQL_SERVER_FQDN" SQL_DATABASE="$SQL_DATABASE_NAME" APP_IDENTITY_NAME APP_IDENTITY_CLIENT_ID ANNOUNCE_QUEUE_URL
[[ $skip_grant -eq 1 ]] || infra/scripts/grant-app-identity.sh
if [[ $skip_schema -eq 0 || $skip_code -eq 0 ]]; then
  say "npm ci"
  npm ci --no-audit --no-fund
fi
[[ $skip_schema -eq 1 ]] || infra/scripts/apply-schema.sh

# The latest deployment of a Flex Consumption app, from its SCM site (/api/deployments/latest, Entra token):
# prints succeeded | failed | running | unknown, waiting up to $2 seconds while it runs.
wait_for_latest_deployment() {
  local app="$1" max="$2" scm token body status complete waited=0
  scm="$(az functionapp show -g "$RG" -n "$app" --query "hostNameSslStates[?hostType=='Repository'].name | [0]" -o tsv 2>/dev/null || true)"
  [[ -n "$scm" ]] || { echo unknown; return; }
  while :; do
    token="$(az account get-access-token --query accessToken -o tsv 2>/dev/null || true)"
    body="$(curl -fsS --max-time 30 -H "Authorization: Bearer $token" "https://$scm/api/deployments/latest" 2>/dev/null || true)"
    # shellcheck disable=SC2016 # a JavaScript template literal, not shell
    status="$(printf '%s' "$body" | node -e 'let t = ""; process.stdin.on("data", (c) => (t += c)).on("end", () => {
      try { const d = JSON.parse(t); process.stdout.write(`${d.status ?? ""} ${d.complete ?? ""}`); } catch { process.stdout.write(" "); } })')"
    complete="${status#* }"; status="${status%% *}"
    case "$status" in
      4) echo succeeded; return ;;
      3) echo failed; return ;;
      0 | 1 | 2) [[ "$complete" != "true" ]] || { echo failed; return; } ;;
      *) echo unknown; return ;;
    esac
    [[ $waited -lt $max ]] || { echo running; return; }
    sleep 10; waited=$((waited + 10))
  done
}

# ---------------------------------------------------------------------------------------------------------
# 4. Code: build, package (dist + production node_modules), zip deploy to the Flex Consumption app
# ---------------------------------------------------------------------------------------------------------
if [[ $skip_code -eq 0 ]]; then
  say "building"
  npm run build
  stage="$work/package"
  mkdir -p "$stage"
  cp host.json package.json package-lock.json "$stage/"
  cp -R dist "$stage/dist"
  (cd "$stage" && npm ci --omit=dev --no-audit --no-fund)
  (cd "$stage" && zip -qr "$work/app.zip" host.json package.json dist node_modules)
  say "deploying the package ($(du -h "$work/app.zip" | cut -f1)) to $APP"
  for attempt in 1 2 3; do
    # config-zip waits for the deployment (--timeout bounds that wait), then polls the host's status in a loop
    # that can run forever (azure-cli's post-deploy check): the whole command gets at most 15 minutes.
    if run_bounded 900 az functionapp deployment source config-zip --resource-group "$RG" --name "$APP" \
      --src "$work/app.zip" --timeout 600 --output none; then
      break
    fi
    # It failed or ran out of time, but the upload may have landed: look before uploading again (a second
    # upload while one is running is refused with 409, and a finished one needs no repeat).
    state="$(wait_for_latest_deployment "$APP" 600)"
    if [[ "$state" == "succeeded" ]]; then
      echo "the latest deployment of $APP succeeded (the CLI reported a failure or ran out of time after the upload)"
      break
    fi
    [[ $attempt -lt 3 ]] || die "the zip deployment failed 3 times (latest deployment: $state)"
    # right after the first deployment the identity's storage role may not apply yet (403 on the package upload)
    echo "the latest deployment is '$state'; uploading again in 60 s ..."; sleep 60
  done
fi

# ---------------------------------------------------------------------------------------------------------
# The signing secret's Key Vault reference: right after a first deployment the identity's access to the vault
# may not apply yet, and the app then sees the reference text (callbacks stay off, everything else works).
# Wait for it to resolve, restarting the app so the platform fetches it again.
# ---------------------------------------------------------------------------------------------------------
app_id="$(az functionapp show -g "$RG" -n "$APP" --query id -o tsv)"
reference_status() {
  az rest --method get --output tsv --query properties.status \
    --url "https://management.azure.com${app_id}/config/configreferences/appsettings/CALLBACK_SIGNING_SECRET?api-version=2022-03-01" 2>/dev/null || true
}
status="$(reference_status)"
for _ in 1 2 3 4 5 6 7 8 9 10; do
  [[ "$status" == "Resolved" || -z "$status" ]] && break
  say "the Key Vault reference of CALLBACK_SIGNING_SECRET is '$status'; restarting the app in 60 s to fetch it again"
  sleep 60
  az functionapp restart -g "$RG" -n "$APP" --output none
  sleep 20
  status="$(reference_status)"
done
[[ "$status" == "Resolved" || -z "$status" ]] ||
  echo "warning: CALLBACK_SIGNING_SECRET is still '$status': callbacks are off until it resolves (docs/azure.md, troubleshooting)" >&2

# ---------------------------------------------------------------------------------------------------------
# 5. Check
# ---------------------------------------------------------------------------------------------------------
say "waiting for https://$APP_HOST/api/health"
healthy=0
for _ in $(seq 1 24); do
  if body="$(curl -fsS --max-time 30 "https://$APP_HOST/api/health" 2>/dev/null)"; then
    echo "$body"; healthy=1; break
  fi
  sleep 10
done
[[ $healthy -eq 1 ]] || echo "warning: /api/health did not answer 200 yet; see docs/azure.md (Deploy to Azure, step 6)" >&2

cat <<EOF

Done. Try it:
  KEY=\$(az functionapp keys list -g $RG -n $APP --query functionKeys.default -o tsv)
  curl -X POST "https://$APP_HOST/api/queues/worker/messages" -H "x-functions-key: \$KEY" \\
       -H 'content-type: application/json' -d '{"payload":{"hello":"azure"}}'
  curl "https://$APP_HOST/api/queues/worker" -H "x-functions-key: \$KEY"
EOF
