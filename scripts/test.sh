#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian machine, then run all of it:
# the suite with torch (the parity oracle), and the suite again with torch blocked.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && { ! command -v dot >/dev/null || ! command -v chromium >/dev/null; }; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz chromium >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -e ".[test]"

mkdir -p tests/artifacts
echo "== full suite (torch 2.13.0 as the parity oracle, browser tests included)"
python3 -m pytest -q -p no:cacheprovider "$@"
echo "== again without torch (torch imports blocked): torch-only tests must skip"
GRADVIZ_BLOCK_TORCH=1 python3 -m pytest -q -p no:cacheprovider -m "not browser and not slow" -rs "$@"
