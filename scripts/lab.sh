#!/usr/bin/env bash
# Set up gradviz with JupyterLab and open the lessons: JupyterLab is rooted at the repository (so
# the README and docs/ are browsable too) and opens lessons/01_computational_graph.ipynb, the same
# path the Binder badge opens. Extra arguments go to `jupyter lab` (e.g. --no-browser, --port=9999).
#
# Installs, the first time: Graphviz's `dot` with apt-get when run as root and missing (without
# it the widget uses its built-in layout); into the project's virtual environment .venv (see
# scripts/venv.sh), gradviz with its lab extra: JupyterLab, ipykernel, anywidget, ipywidgets,
# graphviz and matplotlib. No torch: lesson 7 skips its PyTorch half without it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v dot >/dev/null; then
    echo "== apt-get install graphviz"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null || true
fi
use_project_venv
install_project lab

extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
exec python3 -m jupyter lab --ServerApp.root_dir="$PWD" \
    --LabApp.default_url=/lab/tree/lessons/01_computational_graph.ipynb "${extra[@]}" "$@"
