#!/usr/bin/env bash
# Set up gradviz with JupyterLab and open the lessons. Graphviz's `dot` is used when present
# (installed here when running as root); without it the widget uses its built-in layout.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && ! command -v dot >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null || true
fi
python3 -m pip install -q --disable-pip-version-check -e ".[lab]"
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
exec python3 -m jupyter lab "${extra[@]}" "$@" lessons/01_computational_graph.ipynb
