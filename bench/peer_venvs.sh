#!/usr/bin/env bash
# Venvs for peers that cannot share ours: verl 0.9.1 pins transformers<5.11 (ours: 5.17).
# Builds /tmp/rlvr-gym-verl (torch 2.13.0 CPU first, then verl with torch held), with this
# checkout installed editable, and prints the variable tests/backends/peers/test_peers.py reads:
#   bash bench/peer_venvs.sh && export RLVR_GYM_VERL_PYTHON=/tmp/rlvr-gym-verl/bin/python
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-/tmp/rlvr-gym-verl}"
python3 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q "verl==0.9.1" "torch==2.13.0" -e "$here"
"$venv/bin/python" -c "import verl, transformers; print('verl', verl.__version__, 'transformers', transformers.__version__)"
echo "export RLVR_GYM_VERL_PYTHON=$venv/bin/python"
