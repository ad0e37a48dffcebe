"""The Binder setup, rebuilt from binder/ alone: a clean virtualenv runs every lesson.

Docker (and so repo2docker) isn't available here, so this does what Binder does with our files:
a fresh virtualenv (no system site-packages), ``pip install -r binder/requirements.txt``, then
``binder/postBuild`` in a copy of the repository. Every lesson is then executed with nbclient
by that virtualenv's own Python and kernel, from a folder where the checkout is not importable,
so gradviz must come from the install. PyTorch is not installed, as on Binder: lesson 07 must
skip its comparison. Nothing is cached; everything lives in a temporary folder.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
IGNORED = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis",
                                 "artifacts", "build", "dist", "*.egg-info", ".ipynb_checkpoints")

RUNNER = textwrap.dedent('''
    import json, pathlib, sys, time
    import nbformat
    from nbclient import NotebookClient

    results = {}
    for path in sorted(pathlib.Path(sys.argv[1]).glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        probe = nbformat.v4.new_code_cell("import sys, gradviz\\nprint(sys.executable)\\nprint(gradviz.__file__)")
        probe.id = "binder-probe"
        notebook.cells.append(probe)
        started = time.perf_counter()
        NotebookClient(notebook, timeout=60, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        seconds = time.perf_counter() - started
        cells, errors = {}, []
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            parts = []
            for output in cell.outputs:
                if output.output_type == "stream":
                    parts.append(output.text)
                elif output.output_type == "error":
                    errors.append(f"[{cell.id}] {output.ename}: {output.evalue}")
                else:
                    data = output.get("data", {})
                    parts.append(data.get("text/plain", "") + "\\n")
                    if "application/vnd.jupyter.widget-view+json" in data:
                        parts.append("<widget>\\n")
            cells[cell.id] = "".join(parts)
        results[path.stem] = {"seconds": seconds, "errors": errors, "cells": cells}
    print(json.dumps(results))
''')


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def require_pip(python: str, workdir: pathlib.Path) -> None:
    """Skip, with the reason, when no package index can be reached."""
    probe = run([python, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--dest",
                 str(workdir / "probe"), "graphviz==0.21"], timeout=300)
    if probe.returncode != 0:
        reason = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "no output"
        pytest.skip(f"pip cannot reach a package index here, so the Binder environment cannot be built: {reason}")


@pytest.fixture(scope="module")
def binder_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("binder")
    venv = workdir / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    if made.returncode != 0:
        pytest.skip(f"python -m venv is not available: {made.stderr.strip()}")
    python = str(venv / "bin" / "python")
    require_pip(python, workdir)

    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "JUPYTER_PATH", "JUPYTER_DATA_DIR", "PYTHONHOME")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               PYTHONNOUSERSITE="1", PIP_NO_CACHE_DIR="1", JUPYTER_PATH=str(workdir / "jupyter"),
               JUPYTER_CONFIG_DIR=str(workdir / "jupyter-config"), JUPYTER_RUNTIME_DIR=str(workdir / "runtime"))

    installed = run([python, "-m", "pip", "install", "-r", str(BINDER / "requirements.txt")],
                    env=env, timeout=1500)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]

    repo = workdir / "repo"
    shutil.copytree(ROOT, repo, ignore=IGNORED)
    built = run(["bash", str(repo / "binder" / "postBuild")], env=env, cwd=repo, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]

    # run the lessons from a copy outside the repository: only the installed gradviz can be imported
    lessons = workdir / "classroom"
    lessons.mkdir()
    for notebook in (repo / "lessons").glob("[0-9][0-9]_*.ipynb"):
        shutil.copy(notebook, lessons / notebook.name)
    (workdir / "runner.py").write_text(RUNNER)
    executed = run([python, str(workdir / "runner.py"), str(lessons)], env=env, cwd=lessons, timeout=1200)
    assert executed.returncode == 0, executed.stderr[-5000:]
    sizes = run(["du", "-sm", str(venv)])
    return {"venv": venv, "results": json.loads(executed.stdout.strip().splitlines()[-1]),
            "venv_mb": int(sizes.stdout.split()[0]) if sizes.returncode == 0 else None,
            "freeze": run([python, "-m", "pip", "freeze"], env=env).stdout}


def test_binder_environment_has_no_torch_and_installs_gradviz(binder_run):
    packages = {re.split(r"==| @ ", line)[0].strip().lower() for line in binder_run["freeze"].splitlines()
                if "==" in line or " @ " in line}
    assert "torch" not in packages
    assert {"numpy", "anywidget", "ipywidgets", "jupyterlab", "notebook", "graphviz", "ipykernel", "matplotlib",
            "gradviz-lab"} <= packages
    print(f"binder venv: {binder_run['venv_mb']} MB")


def test_every_lesson_runs_in_the_binder_environment(binder_run):
    results = binder_run["results"]
    assert sorted(results) == ["01_computational_graph", "02_chain_rule", "03_accumulation", "04_no_grad",
                               "05_dynamic_graphs", "06_devices", "07_real_pytorch",
                               "08_hooks_and_saved_tensors", "09_training_a_network",
                               "10_custom_functions", "11_higher_order", "12_forward_mode", "13_mini_batches",
                               "14_backprop_through_time", "15_convolutions",
                               "16_attention"]
    venv = str(binder_run["venv"])
    for stem, result in results.items():
        assert result["errors"] == [], f"{stem}: {result['errors']}"
        assert result["seconds"] < 60, f"{stem} took {result['seconds']:.1f} s"
        executable, module = result["cells"]["binder-probe"].splitlines()
        assert executable.startswith(venv) and module.startswith(venv), (stem, executable, module)
        print(f"{stem}: {result['seconds']:.1f} s in the Binder environment")


def test_seed_results_in_the_binder_environment(binder_run):
    cells = {stem: result["cells"] for stem, result in binder_run["results"].items()}
    lesson01 = cells["01_computational_graph"]
    assert "<BinaryCrossEntropyWithLogitsBackward0 object at" in lesson01["l01-grad-fn"]
    assert "<widget>" in lesson01["l01-show"]
    assert cells["02_chain_rule"]["l02-x-grad"] == "tensor(6.7924)\n"
    assert cells["02_chain_rule"]["l02-auto-grads"] == "tensor(6.6918)\ntensor(0.9988)\n"
    assert cells["03_accumulation"]["l03-zero"] == "tensor(0.)\n"
    assert "<loss curve: with zero_grad(): 20 steps" in cells["03_accumulation"]["l03-train-bug"]  # matplotlib drew it
    assert cells["04_no_grad"]["l04-way3-no-grad"].startswith("tensor(4.8000)\n")
    assert cells["06_devices"]["l06-device"] == "using cpu\n"
    assert "PyTorch is not installed here" in cells["07_real_pytorch"]["l07-torch-available"]
    assert cells["07_real_pytorch"]["l07-compare"] == "Skipped: PyTorch is not installed.\n"
