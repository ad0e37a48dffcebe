"""A numpy-only install: no anywidget, no ipywidgets. Exporting still works; showing says what to install.

Each check runs in a fresh interpreter whose imports of anywidget and ipywidgets fail, as they
would where the ``widget`` extra was never installed.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

REPO = pathlib.Path(__file__).parents[1]

BLOCKER = """
import importlib.abc, sys

class NoWidgets(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("anywidget", "ipywidgets"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoWidgets())
"""


def run_without_widgets(code: str, tmp_path: pathlib.Path) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    script = BLOCKER + textwrap.dedent(code)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_export_html_and_to_html_need_no_anywidget(tmp_path):
    out = run_without_widgets("""
        import json, re, sys
        import gradviz as gv

        x = gv.tensor(2.0, requires_grad=True)
        w = gv.tensor(3.0, requires_grad=True)
        loss = (x * w + 1) * x
        page = gv.export_html(loss, "graph.html").read_text()
        state = json.loads(re.search(r'-state">(.*?)</script>', page).group(1))
        fragment = gv.to_html(loss, names={"x": x})
        print(sorted({n["label"] for n in state["graph"]["nodes"] if n["kind"] == "leaf"}),
              len(state["trace"]), "graph_layout" in state, 'class="gradviz-embed"' in fragment,
              any(name.split(".")[0] in ("anywidget", "ipywidgets") for name in sys.modules))
    """, tmp_path)
    assert out.split() == ["['w',", "'x']", "5", "True", "True", "False"]


def test_show_without_anywidget_says_what_to_install(tmp_path):
    out = run_without_widgets("""
        import gradviz as gv

        loss = gv.tensor(2.0, requires_grad=True) * 3
        for attempt in (lambda: gv.show(loss), lambda: gv.GraphWidget(loss)):
            try:
                attempt()
            except ImportError as error:
                print(type(error).__name__, "|", error)
    """, tmp_path)
    lines = out.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("ImportError |") and 'pip install "gradviz-lab[widget]"' in line
