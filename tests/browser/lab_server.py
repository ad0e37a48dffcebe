"""Start a throwaway JupyterLab 4 (or Notebook 7) for the browser tests:
``with jupyterlab(root) as url: ...``, ``with jupyterlab(root, app="notebook") as url: ...``.

The server listens on 127.0.0.1 with no token, is rooted at ``root``, keeps its settings and
workspaces under ``root`` (so theme changes never reach the user's own settings), exposes
``window.jupyterapp`` for Playwright to drive, and runs kernels with this checkout first on
PYTHONPATH. Its log is ``root/server.log``.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

REPO = pathlib.Path(__file__).parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Per front end: the `jupyter` subcommand and the options that are its own.
APPS = {
    "lab": ["lab", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
    "notebook": ["notebook", "--JupyterNotebookApp.expose_app_in_browser=True"],
}


@contextlib.contextmanager
def jupyterlab(root: pathlib.Path, startup_seconds: float = 120, app: str = "lab"):
    """Yield the URL of a JupyterLab (``app="notebook"``: Notebook 7) serving ``root``; stop it afterwards."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               JUPYTER_CONFIG_DIR=str(root / "config"), JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"))
    subcommand, *own_options = APPS[app]
    command = [sys.executable, "-m", "jupyter", subcommand, "--no-browser", "--allow-root", f"--port={port}",
               "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", f"--ServerApp.root_dir={root}",
               *own_options]
    url = f"http://127.0.0.1:{port}"
    with open(root / "server.log", "w") as log:
        server = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + startup_seconds
            while True:
                try:
                    urllib.request.urlopen(f"{url}/api/status", timeout=1)
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"jupyter {subcommand} did not start:\n" + (root / "server.log").read_text()[-3000:])
                    time.sleep(0.5)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


@contextlib.contextmanager
def lab_with_notebook(root: pathlib.Path, name: str, cells: list):
    """A JupyterLab serving ``root``, with a notebook ``name`` of code ``cells``; yields its URL."""
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, root / name)
    with jupyterlab(root) as url:
        yield url


def open_notebook(page, url: str, timeout_ms: int = 120_000) -> None:
    """Go to ``url`` and wait until the notebook's kernel is idle (news toasts hidden)."""
    page.goto(url)
    page.wait_for_function("""() => {
        const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
        const kernel = panel && panel.sessionContext && panel.sessionContext.session
                       && panel.sessionContext.session.kernel;
        return kernel && kernel.status === 'idle';
    }""", timeout=timeout_ms)
    page.add_style_tag(content=".Toastify { display: none !important; }")

# Driving a notebook open in either front end (both expose `window.jupyterapp`).
NOTEBOOK = "window.jupyterapp.shell.currentWidget"
KERNEL_IDLE = f"""() => {{
    const panel = window.jupyterapp && {NOTEBOOK};
    const session = panel && panel.sessionContext && panel.sessionContext.session;
    return Boolean(session && session.kernel && session.kernel.status === 'idle');
}}"""


def run_cell(page, index: int, timeout_ms: int = 120_000) -> None:
    """Run cell ``index`` and wait until it has finished: its execution count is set and the
    kernel is idle again (so every message the cell sent, widget updates included, has arrived)."""
    page.evaluate(f"""async () => {{
        const panel = {NOTEBOOK};
        panel.content.activeCellIndex = {index};
        await window.jupyterapp.commands.execute('notebook:run-cell');
    }}""")
    page.wait_for_function(f"""() => {NOTEBOOK}.content.widgets[{index}].model.executionCount !== null""",
                           timeout=timeout_ms)
    page.wait_for_function(KERNEL_IDLE, timeout=timeout_ms)
