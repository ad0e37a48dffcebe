# Sourced by scripts/lab.sh and scripts/test.sh (not run on its own).
#
# use_project_venv: from here on, `python3` and `pip` are a virtual environment's. Inside an active
# virtual environment that one is used; otherwise the project's own, .venv at the repository root,
# is created on first use and activated. This is what makes the README's two commands work on
# Debian's externally-managed /usr/bin/python3 (where `pip install` outside a venv is refused),
# as root or not, and on CI (a pyenv python3 that allows pip, where a venv keeps runs apart).

use_project_venv() {
    if ! command -v python3 >/dev/null; then
        need_debian_package python3
    fi
    if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
        echo "== using the active virtual environment: $(python3 -c 'import sys; print(sys.prefix)')"
        return
    fi
    if [ ! -x .venv/bin/python3 ] || ! .venv/bin/python3 -m pip --version >/dev/null 2>&1; then
        echo "== creating the project's virtual environment in .venv (python3 is $(command -v python3))"
        rm -rf .venv
        if ! python3 -m venv .venv; then
            # Debian ships venv's pip (ensurepip) in a separate package, python3-venv.
            rm -rf .venv
            need_debian_package python3-venv
            python3 -m venv .venv
        fi
    fi
    # shellcheck disable=SC1091
    . .venv/bin/activate
    echo "== using .venv ($(python3 --version))"
}

# need_debian_package PACKAGE: install it with apt-get when root; otherwise say exactly what to run.
need_debian_package() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "== apt-get install $1"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
    else
        echo "This needs the Debian package $1. Install it, then run this script again:" >&2
        echo "    sudo apt-get install -y $1" >&2
        exit 1
    fi
}

# install_project EXTRA: pip install -e ".[EXTRA]" into the active environment, skipped when the
# same pyproject.toml was already installed there with that extra (the install is editable, so
# code changes need no reinstall). Delete the environment's .gradviz-EXTRA stamp to force it.
install_project() {
    local stamp wanted
    stamp="$(python3 -c 'import sys; print(sys.prefix)')/.gradviz-$1"
    wanted="$(sha256sum pyproject.toml | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && python3 -c 'import importlib.metadata as m; m.version("gradviz-lab")' 2>/dev/null; then
        echo "== gradviz[$1] already installed in $(dirname "$stamp")"
        return
    fi
    echo "== pip install -e .[$1]"
    python3 -m pip install -q --disable-pip-version-check -e ".[$1]"
    echo "$wanted" > "$stamp"
}
