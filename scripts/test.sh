#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian machine, then run all of it:
# the suite with torch (the parity oracle), and the suite again with torch blocked.
#
# Installs, the first time: with apt-get when run as root and missing, graphviz (dot), chromium
# (the browser tests) and an emoji font (the lessons' screenshots); into the project's virtual
# environment .venv (see scripts/venv.sh), gradviz with its test extra: JupyterLab, the widget
# stack, matplotlib, pytest, hypothesis, nbclient, playwright, torch==2.13.0 (pinned: the CPU
# build these machines carry) and torchviz. Later runs reuse all of it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && { ! command -v dot >/dev/null \
        || ! command -v chromium >/dev/null || ! fc-list 2>/dev/null | grep -qi "color emoji"; }; then
    echo "== apt-get install graphviz chromium fonts-noto-color-emoji"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz chromium fonts-noto-color-emoji >/dev/null
fi
use_project_venv
install_project test

mkdir -p tests/artifacts
echo "== full suite (torch 2.13.0 as the parity oracle, browser tests included)"
python3 -m pytest -q -p no:cacheprovider "$@"
echo "== again without torch (torch imports blocked): torch-only tests must skip"
GRADVIZ_BLOCK_TORCH=1 python3 -m pytest -q -p no:cacheprovider -m "not browser and not slow" -rs "$@"
