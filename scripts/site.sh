#!/usr/bin/env bash
# Build the course as a static HTML site in site/ (or the folder given with --out): every lesson
# executed top to bottom, converted by nbconvert, with an index page. Each graph on the pages
# still steps the backward pass in the browser, with no kernel and no network. Open
# site/index.html from disk, or publish the folder on any static web host (GitHub Pages, ...).
#
# Uses the project's virtual environment .venv (see scripts/venv.sh) with gradviz's lab extra,
# as scripts/lab.sh does. Extra arguments go to scripts/build_site.py: --out DIR, --theme dark,
# or the lesson notebooks to build (default: all of them). About a minute; from a fresh clone with
# Debian's /usr/bin/python3, two (the .venv is made and filled first).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh

use_project_venv
install_project lab
exec python3 scripts/build_site.py "$@"
