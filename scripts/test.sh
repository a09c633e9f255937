#!/usr/bin/env bash
# The whole test suite: starts the services some tests need (PostgreSQL, Chromium, KaTeX; see
# scripts/services.sh), then runs pytest on 2 processes. --dist loadscope sends a module's tests to one
# worker, so a module-scoped fixture (a lab run, a trained model) is built once, not once per worker
# (loadgroup's xdist_group marks are silently ignored under pytest 9.2: pytest-xdist#1386).
# Extra arguments go to pytest.
# Where the services cannot be installed (no root, no apt) the tests that need them skip with the
# reason; under CI (CI=true) that is an error, since CI must run everything.
set -euo pipefail
cd "$(dirname "$0")/.."
if services=$(bash scripts/services.sh); then
  eval "$services"
elif [ "${CI:-}" = true ]; then
  echo "test: scripts/services.sh failed; CI needs PostgreSQL and Chromium" >&2
  exit 1
else
  echo "test: services unavailable; PostgreSQL and browser tests will be skipped" >&2
fi
exec .venv/bin/python -m pytest -n 2 --dist loadscope --durations=30 "$@" tests prmkit
