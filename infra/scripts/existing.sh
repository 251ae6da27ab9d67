# Finds out, before the real deployment, which SQL server and Key Vault it will use and what already exists
# (sourced by infra/deploy.sh, after common.sh; infra/azd/hooks/preprovision.mjs does the same for azd).
# shellcheck shell=bash disable=SC2034 # the variables set here are read by the scripts that source this file
#
# inspect_existing <resource group> <name prefix> <work dir> sets:
#   sql_server_name, key_vault_name       the names main.bicep will use (from modules/names.bicep, deployed alone:
#                                         it has no resources, so it only evaluates the names)
#   sql_server_exists                     true | false
#   admin_login, admin_sid, admin_type    the existing server's Entra admin (empty for a new server); read with
#                                         --expand-ad-admin, without which `az sql server show` omits it
#   signing_secret_exists                 true | false: the vault holds callback-signing-secret
# A lookup that fails for another reason than "not found" stops the script: guessing "missing" could send a new
# admin block to an existing server or rotate the signing secret that callback receivers verify with.

# Reads one value from a JSON file by a dotted path (prints nothing when absent).
json_get() {
  node -e 'let v = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    for (const k of process.argv[2].split(".")) v = v == null ? undefined : v[k];
    if (v !== undefined && v !== null) process.stdout.write(String(v));' "$1" "$2"
}

is_not_found() { grep -qiE 'not ?found|ResourceNotFound|could not be found' <<<"$1"; }

inspect_existing() {
  local rg="$1" prefix="$2" dir="$3" err
  # Not named asyncresponse-*: --skip-infra reads the outputs of the latest asyncresponse-* deployment.
  az deployment group create --resource-group "$rg" --name "names-asyncresponse" \
    --template-file infra/modules/names.bicep --parameters "namePrefix=$prefix" \
    --query properties.outputs --output json >"$dir/names.json" || die "could not evaluate the resource names (infra/modules/names.bicep)"
  sql_server_name="$(json_get "$dir/names.json" sqlServer.value)"
  key_vault_name="$(json_get "$dir/names.json" keyVault.value)"
  [[ -n "$sql_server_name" && -n "$key_vault_name" ]] || die "infra/modules/names.bicep returned no names"

  sql_server_exists=false admin_login='' admin_sid='' admin_type=''
  if az sql server show --resource-group "$rg" --name "$sql_server_name" --expand-ad-admin --output json >"$dir/server.json" 2>"$dir/server.err"; then
    sql_server_exists=true
    admin_login="$(json_get "$dir/server.json" administrators.login)"
    admin_sid="$(json_get "$dir/server.json" administrators.sid)"
    admin_type="$(json_get "$dir/server.json" administrators.principalType)"
  else
    err="$(cat "$dir/server.err")"
    is_not_found "$err" || die "could not check the SQL server $sql_server_name: $err"
  fi

  signing_secret_exists=false
  local sub
  sub="$(az account show --query id -o tsv)"
  if az resource show --ids "/subscriptions/$sub/resourceGroups/$rg/providers/Microsoft.KeyVault/vaults/$key_vault_name/secrets/callback-signing-secret" \
    --output none 2>"$dir/secret.err"; then
    signing_secret_exists=true
  else
    err="$(cat "$dir/secret.err")"
    is_not_found "$err" || die "could not check the signing secret in $key_vault_name: $err"
  fi
}
