# Helpers shared by infra/deploy.sh, the step scripts in infra/scripts/ and the azd hooks (sourced, not run).
# shellcheck shell=bash disable=SC2034 # the variables set here are read by the scripts that source this file

say() { printf '\n== %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is not installed ($2)"; }

# The grant step needs go-sqlcmd (github.com/microsoft/go-sqlcmd): the ODBC sqlcmd has the same name but no
# --authentication-method, so it would fail later with a less helpful message.
need_go_sqlcmd() {
  need sqlcmd "go-sqlcmd: https://github.com/microsoft/go-sqlcmd"
  sqlcmd --help 2>&1 | grep -q -- '--authentication-method' ||
    die "the sqlcmd on PATH is not go-sqlcmd (it has no --authentication-method); install https://github.com/microsoft/go-sqlcmd or put it first on PATH"
}

# Every local database step authenticates as YOU (az login), never as the app: a stray AZURE_CLIENT_ID would make
# the app's credential code (and azidentity) try a managed identity that does not exist on this machine, and a
# stray DATABASE_URL / SQL_CONNECTION_STRING would point the schema step at another database.
as_deployer=(env -u AZURE_CLIENT_ID -u AZURE_CLIENT_SECRET -u DATABASE_URL -u SQL_CONNECTION_STRING -u SQL_USER -u SQL_PASSWORD)

# Runs "$@" for at most $1 seconds (coreutils timeout where present; macOS has none by default). Exit 124 when the
# time ran out, like timeout(1).
run_bounded() {
  local seconds="$1"; shift
  if command -v timeout >/dev/null 2>&1; then
    timeout "$seconds" "$@"
    return
  fi
  "$@" &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if [[ $waited -ge $seconds ]]; then
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      return 124
    fi
    sleep 1; waited=$((waited + 1))
  done
  wait "$pid"
}
