"""Bad input to show, export_html and the snapshot: a clear TypeError or ValueError that names
the argument, raised before any work; labels that no DOT string could hold still give valid DOT."""
from __future__ import annotations

import shutil
import subprocess

import pytest

import gradviz as gv
from gradviz.render import graph_to_dot
from gradviz.widget import export_html, to_html

pytest.importorskip("anywidget")

from gradviz.widget import show  # noqa: E402


def program():
    w = gv.tensor([1.0, 2.0], requires_grad=True)
    return (w * 3).sum(), w


@pytest.mark.parametrize("call", ["show", "export_html", "to_html", "graph"])
@pytest.mark.parametrize("arguments, error, named", [
    (lambda w: {"names": [w]}, TypeError, "names="),
    (lambda w: {"names": {1: w}}, TypeError, "names="),
    (lambda w: {"names": {"w": "not a tensor"}}, TypeError, "names="),
    (lambda w: {"names": {"\ud800": w}}, ValueError, "names="),
    (lambda w: {"model": 42}, TypeError, "model="),
])
def test_bad_names_and_models_name_the_argument(call, arguments, error, named, tmp_path):
    loss, w = program()
    functions = {"show": show, "export_html": lambda t, **k: export_html(t, tmp_path / "x.html", **k),
                 "to_html": to_html, "graph": gv.graph}
    with pytest.raises(error, match=named):
        functions[call](loss, **arguments(w))
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("options, error, named", [
    ({"speed": float("nan")}, ValueError, "speed="),
    ({"speed": float("inf")}, ValueError, "speed="),
    ({"speed": 0}, ValueError, "speed="),
    ({"speed": "fast"}, TypeError, "speed="),
    ({"height": -5}, ValueError, "height="),
    ({"height": 10.5}, ValueError, "height="),
    ({"show_saved": "yes"}, TypeError, "show_saved="),
    ({"collapse": "sometimes"}, ValueError, "collapse="),
])
def test_bad_option_values_name_the_option(options, error, named, tmp_path):
    loss, _ = program()
    for call in (lambda: show(loss, **options), lambda: export_html(loss, tmp_path / "x.html", **options),
                 lambda: to_html(loss, **options)):
        with pytest.raises(error, match=named):
            call()


def test_show_and_export_treat_unknown_options_the_same_way(tmp_path):
    loss, _ = program()
    messages = []
    for caller, call in (("show", lambda: show(loss, colour="red")),
                         ("export_html", lambda: export_html(loss, tmp_path / "x.html", colour="red")),
                         ("to_html", lambda: to_html(loss, colour="red"))):
        with pytest.raises(TypeError) as raised:
            call()
        messages.append(str(raised.value).replace(f"{caller}()", "CALLER()"))
    assert len(set(messages)) == 1 and "'colour'" in messages[0] and "speed" in messages[0]


def test_an_unwritable_export_path_is_refused_before_any_work(tmp_path, monkeypatch):
    from gradviz.widget import state

    monkeypatch.setattr(state, "graph_of", lambda *a, **k: pytest.fail("work done before the path check"))
    loss, _ = program()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for path, named in ((tmp_path / "missing" / "x.html", "does not exist"), (a_file / "x.html", "does not exist"),
                        (tmp_path, "is a folder")):
        with pytest.raises(ValueError, match=f"path=.*{named}"):
            export_html(loss, path)
    with pytest.raises(TypeError, match="path="):
        export_html(loss, 42)


def test_a_read_only_export_path_is_refused(tmp_path, monkeypatch):
    loss, _ = program()
    import os

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as for a user without permission
    with pytest.raises(ValueError, match="path=.*cannot be written"):
        export_html(loss, tmp_path / "x.html")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("label", ["a\x00b", "L" * 20_000, "\\\"" * 10_000, "bell\x07\x1b[31m\x7f", "a\u2028b\rc"])
def test_any_label_gives_dot_that_graphviz_accepts(label):
    loss, w = program()
    dot = graph_to_dot(gv.graph(loss, names={label: w}))
    result = subprocess.run(["dot", "-Tsvg"], input=dot.encode("utf-8"), capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert b"\x00" not in dot.encode("utf-8")
