#!/usr/bin/env bash
# Installs (only what is missing) and starts what the labelling app's tests need, idempotently:
#   - Debian's chromium and chromium-driver (browser tests; Playwright drives /usr/bin/chromium),
#   - Debian's postgresql, with a server of the project's own on .services/pg, port $PRMKIT_PG_PORT
#     (default 54329), loopback only, trust authentication (a test server: nothing but this machine reaches it),
#   - Debian's npm, and KaTeX for the app's pages: `bash scripts/bootstrap.sh --katex` (npm ci from the
#     committed package-lock.json, skipped when already installed).
# Prints the variables the tests read; use it as:   eval "$(bash scripts/services.sh)"
# Runs as root (apt-get; PostgreSQL then runs as the `postgres` user, since it refuses root) or as a
# user who already has the packages. Status messages go to stderr, the exports to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
port=${PRMKIT_PG_PORT:-54329}
data=$root/.services/pg
log() { echo "services: $*" >&2; }

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
command -v npm >/dev/null 2>&1 || need+=(npm)
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$pgbin" ] && [ -x "$pgbin/initdb" ] || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends "${need[@]}" >&2
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi

# KaTeX: the set-up's own step (nothing to do when installed); the browser tests need it.
bash scripts/bootstrap.sh --katex >&2
if [ ! -f prmkit/label/node_modules/katex/dist/katex.min.js ]; then
  log "KaTeX is missing (see the warning above)"
  exit 1
fi

# PostgreSQL refuses to run as root: run it as `postgres` when we are root.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$root/.services"
[ -f "$root/.services/.gitignore" ] || echo '*' > "$root/.services/.gitignore"
# A checkout the postgres user cannot enter (a clone in a `mktemp -d` folder is mode 700) gets its
# server's data outside it, in a folder named after the checkout, so two clones never share one.
if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$root/.services"; then
  data=${TMPDIR:-/tmp}/prmkit-pg-$(printf '%s' "$root" | sha1sum | cut -c1-12)
  log "postgres cannot enter $root: its data goes to $data"
fi
if "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  log "postgresql already running on port $port"
else
  if [ ! -f "$data/PG_VERSION" ]; then
    log "initdb $data"
    mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$data"
    chmod 700 "$data"
    as_pg "$pgbin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >&2
  fi
  sock=$data/socket
  mkdir -p "$sock"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$sock"
  log "starting postgresql on 127.0.0.1:$port"
  as_pg "$pgbin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 start \
    -o "-p $port -k $sock -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on" >&2
fi

echo "export PRMKIT_TEST_PG=postgresql://postgres@127.0.0.1:$port/postgres"
echo "export PRMKIT_CHROMIUM=$(command -v chromium)"
