#!/usr/bin/env bash
# azd preprovision hook (azure.yaml): what infra/deploy.sh does before its Bicep deployment, written into the azd
# environment for infra/azd/main.parameters.json: creates the resource group only when it does not exist (a
# create on an existing group clears its tags), finds out whether the SQL server exists (its Entra admin is set
# differently then, modules/sql.bicep) and keeps its admin, generates the signing secret on the first deployment
# only, and admits your IP on the SQL firewall for the postprovision grant and schema steps.
# Needs the Azure CLI signed in (az login) next to azd.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=infra/scripts/common.sh
. infra/scripts/common.sh
# shellcheck source=infra/scripts/existing.sh
. infra/scripts/existing.sh

need az "https://learn.microsoft.com/cli/azure/install-azure-cli"
need azd "https://aka.ms/azd"
: "${AZURE_RESOURCE_GROUP:?run: azd env set AZURE_RESOURCE_GROUP <group> (this template deploys into one resource group)}"
: "${AZURE_LOCATION:?run: azd env set AZURE_LOCATION <region with Flex Consumption>}"
az account show --query id -o tsv >/dev/null 2>&1 || die "the hooks use the Azure CLI too: run az login"

RG="$AZURE_RESOURCE_GROUP"
if [[ "$(az group exists --name "$RG")" != "true" ]]; then
  say "creating resource group $RG in $AZURE_LOCATION"
  az group create --name "$RG" --location "$AZURE_LOCATION" --output none
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="${NAME_PREFIX:-asyncresp}"
inspect_existing "$RG" "$prefix" "$work"
azd env set NAME_PREFIX "$prefix"
azd env set SQL_SERVER_EXISTS "$sql_server_exists"

if [[ -z "${SQL_ADMIN_OBJECT_ID:-}" && -n "$admin_sid" ]]; then
  say "SQL Entra admin: keeping $admin_login of $sql_server_name"
  azd env set SQL_ADMIN_OBJECT_ID "$admin_sid"
  azd env set SQL_ADMIN_LOGIN "$admin_login"
  azd env set SQL_ADMIN_PRINCIPAL_TYPE "${admin_type:-User}"
elif [[ -z "${SQL_ADMIN_OBJECT_ID:-}" ]]; then
  say "SQL Entra admin: the signed-in user"
  azd env set SQL_ADMIN_OBJECT_ID "$(az ad signed-in-user show --query id -o tsv)"
  azd env set SQL_ADMIN_LOGIN "${SQL_ADMIN_LOGIN:-$(az ad signed-in-user show --query userPrincipalName -o tsv)}"
  azd env set SQL_ADMIN_PRINCIPAL_TYPE "${SQL_ADMIN_PRINCIPAL_TYPE:-User}"
fi

# The secret stays in the azd environment only until the postprovision hook clears it.
if [[ "$signing_secret_exists" != "true" && -z "${CALLBACK_SIGNING_SECRET:-}" ]]; then
  say "generating CALLBACK_SIGNING_SECRET (first deployment); it is stored in Key Vault $key_vault_name"
  azd env set CALLBACK_SIGNING_SECRET "$(node -e 'process.stdout.write(require("crypto").randomBytes(48).toString("base64"))')"
fi

if [[ -z "${DEPLOYER_IP:-}" ]]; then
  ip="$(curl -fsS --max-time 10 https://api.ipify.org 2>/dev/null || true)"
  [[ -n "$ip" ]] && azd env set DEPLOYER_IP "$ip" || echo "warning: could not find your public IP; azd env set DEPLOYER_IP <ip>" >&2
fi
