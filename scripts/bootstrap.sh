#!/usr/bin/env bash
# Creates the project's virtual environment and installs prmkit with the right torch:
# the CPU wheel (torch==2.13.0, the `cpu` extra) where no NVIDIA GPU is visible, the normal
# torch for the platform (the `gpu` extra) where `nvidia-smi` finds one. PRMKIT_TORCH=cpu|gpu overrides.
# Then installs KaTeX for the labelling app's pages (see katex below).
#   bash scripts/bootstrap.sh [VENV]     all of it (VENV defaults to .venv)
#   bash scripts/bootstrap.sh --katex    KaTeX only (what `make venv` runs when package-lock.json changes)
set -euo pipefail
cd "$(dirname "$0")/.."

# KaTeX for `prmkit label serve`: `npm ci` in prmkit/label from the committed package-lock.json, into
# prmkit/label/node_modules (git-ignored; find_katex() looks there). A copy of the lock left in
# node_modules marks a finished install, so a second run does nothing (no network) until the lock
# changes. Without npm (or when npm ci fails) the app still works, showing mathematics as its LaTeX
# source: say so, loudly, and go on.
katex() {
  local label=prmkit/label stamp=prmkit/label/node_modules/.prmkit-lock
  if [ -f "$label/node_modules/katex/dist/katex.min.js" ] && cmp -s "$label/package-lock.json" "$stamp"; then
    touch "$stamp"  # newer than the lock, so make's target is up to date
    echo "prmkit bootstrap: KaTeX already installed ($label/node_modules)"
  elif ! command -v npm >/dev/null 2>&1; then
    echo "prmkit bootstrap: WARNING: npm not found, so KaTeX is not installed and \`prmkit label serve\` will" \
         "show mathematics as LaTeX source. Install Node.js with npm (Debian: apt-get install npm) and run" \
         "\`make venv\` again (or \`npm ci --prefix $label\`)." >&2
  else
    echo "prmkit bootstrap: installing KaTeX (npm ci --prefix $label)"
    if npm ci --prefix "$label" --no-audit --no-fund --loglevel=error; then
      cp "$label/package-lock.json" "$stamp"
    else
      echo "prmkit bootstrap: WARNING: \`npm ci --prefix $label\` failed (above), so KaTeX is not installed" \
           "and \`prmkit label serve\` will show mathematics as LaTeX source; \`make venv\` tries again." >&2
    fi
  fi
}

if [ "${1:-}" = --katex ]; then katex; exit 0; fi

venv=${1:-.venv}
python=${PYTHON:-python3}
flavour=${PRMKIT_TORCH:-}
if [ -z "$flavour" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then flavour=gpu; else flavour=cpu; fi
fi
echo "prmkit bootstrap: venv=$venv torch=$flavour"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
# constraints.txt pins the numeric stack the published numbers were measured with
pins=(-c constraints.txt)
[ "${PRMKIT_UNPINNED:-}" = 1 ] && pins=()
"$venv/bin/python" -m pip install -q "${pins[@]}" -e ".[${flavour},serve,dev,rl]"
"$venv/bin/python" -c "import torch, prmkit; print('torch', torch.__version__, 'cuda' if torch.cuda.is_available() else 'cpu'); print('prmkit', prmkit.__version__)"
katex
