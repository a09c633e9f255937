#!/usr/bin/env bash
# Creates the project's virtual environment and installs prmkit with the right torch:
# the CPU wheel (torch==2.13.0, the `cpu` extra) where no NVIDIA GPU is visible, the normal
# torch for the platform (the `gpu` extra) where `nvidia-smi` finds one. PRMKIT_TORCH=cpu|gpu overrides.
set -euo pipefail
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
"$venv/bin/python" -m pip install -q "${pins[@]}" -e ".[${flavour},serve,dev]"
"$venv/bin/python" -c "import torch, prmkit; print('torch', torch.__version__, 'cuda' if torch.cuda.is_available() else 'cpu'); print('prmkit', prmkit.__version__)"
