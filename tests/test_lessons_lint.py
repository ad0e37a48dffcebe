"""The lesson notebooks are the source a teacher edits in JupyterLab: this checks what a generator
used to guarantee, and what a class would notice first.

* the file: valid nbformat 4.5+, committed with no outputs, execution counts or widget state;
* the cells: unique ids, and every id tests/test_lessons.py reads is there;
* the standard first cells: a ``# Lesson N · ...`` title with learning goals, then the setup cell
  (id ``lNN-setup``) that imports gradviz;
* the helpers: ``check``, ``walk``, ... come from ``gradviz.lessons``, never pasted into a lesson;
* the Markdown: each cell rendered to HTML as nbconvert renders it, exercises as headings and
  paragraphs (never a grey ``<pre><code>`` block with literal backticks and ``**Predict:**``), no
  line indented four spaces outside a fence or a list, no unrendered ``**`` or backticks.

docs/LESSONS.md tells teachers how to edit a lesson; every failure here says what to fix.
"""
from __future__ import annotations

import ast
import html
import pathlib
import re

import nbformat
import pytest
from nbconvert.filters import markdown_mistune

import gradviz.lessons

ROOT = pathlib.Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
HELPERS = set(gradviz.lessons.__all__)
TESTED_ID = re.compile(r"""["'](l(\d\d)-[a-z0-9-]+)["']""")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")


def lesson_number(path: pathlib.Path) -> str:
    return path.stem[:2]


def read(path: pathlib.Path):
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


def markdown_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "markdown"]


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def python_of(cell) -> ast.Module:
    """A code cell as Python (IPython's %magics and !commands turned into calls first)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return ast.parse(TransformerManager().transform_cell(cell.source))


def test_there_are_lessons():
    assert len(LESSONS) >= 7, [path.name for path in LESSONS]


# -- the file ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_valid_and_committed_clean(path):
    notebook = read(path)
    nbformat.validate(notebook)
    assert (notebook.nbformat, notebook.nbformat_minor) >= (4, 5), (
        f"{path.name}: nbformat {notebook.nbformat}.{notebook.nbformat_minor} has no cell ids; save it "
        "again from JupyterLab 4")
    assert notebook.metadata.get("kernelspec", {}).get("name") == "python3", f"{path.name}: kernel is not python3"
    assert "widgets" not in notebook.metadata, (
        f"{path.name} carries saved widget state: Edit > Clear Outputs of All Cells, then save (and turn "
        "off Settings > Save Widget State Automatically)")
    dirty = [cell.id for cell in code_cells(notebook) if cell.outputs or cell.execution_count is not None]
    assert not dirty, (f"{path.name}: cells {dirty} were saved with outputs or execution counts. In JupyterLab: "
                       "Edit > Clear Outputs of All Cells, then save. See docs/LESSONS.md.")


# -- the cells ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_cell_ids_are_unique(path):
    ids = [cell.id for cell in read(path).cells]
    duplicated = sorted({cell_id for cell_id in ids if ids.count(cell_id) > 1})
    assert not duplicated, f"{path.name}: cell ids used twice: {duplicated} (a copied cell keeps its id; rename one)"


def test_every_cell_id_the_tests_read_exists():
    wanted = {}
    for test_file in ("test_lessons.py", "test_binder.py"):
        for cell_id, lesson in TESTED_ID.findall((ROOT / "tests" / test_file).read_text()):
            wanted.setdefault(lesson, set()).add(cell_id)
    assert wanted, "found no cell ids in tests/test_lessons.py"
    for path in LESSONS:
        have = {cell.id for cell in read(path).cells}
        missing = sorted(wanted.get(lesson_number(path), set()) - have)
        assert not missing, (f"{path.name}: tests read cells {missing}, which are gone. Keep those cells' ids "
                             "when you edit them (JupyterLab keeps an id as long as the cell is not deleted).")


# -- the standard first cells ----------------------------------------------------------------------------
@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_title_then_setup_cell(path):
    notebook = read(path)
    number = int(lesson_number(path))
    title = notebook.cells[0]
    assert title.cell_type == "markdown" and title.source.startswith(f"# Lesson {number} · "), (
        f"{path.name}: the first cell must be the title, '# Lesson {number} · ...'")
    assert "Learning goals" in title.source, f"{path.name}: the title cell lists the learning goals"
    setup = code_cells(notebook)[0]
    assert setup.id == f"l{lesson_number(path)}-setup", (
        f"{path.name}: the first code cell is the setup cell and has id l{lesson_number(path)}-setup, not {setup.id}")
    imports = [node for node in python_of(setup).body if isinstance(node, ast.Import)]
    assert any(alias.name == "gradviz" for node in imports for alias in node.names), (
        f"{path.name}: the setup cell imports gradviz")


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_helpers_come_from_the_package(path):
    imported = set()
    for cell in code_cells(read(path)):
        tree = python_of(cell)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in HELPERS:
                pytest.fail(f"{path.name}, cell {cell.id}: defines {node.name}(), which lives in gradviz.lessons; "
                            f"import it instead: from gradviz.lessons import {node.name}")
            if isinstance(node, ast.ImportFrom) and node.module == "gradviz.lessons":
                imported.update(alias.asname or alias.name for alias in node.names)
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in HELPERS}
        missing = sorted(used - imported)
        assert not missing, (f"{path.name}, cell {cell.id}: uses {missing} before importing it: "
                             f"from gradviz.lessons import {', '.join(missing)}")


# -- the Markdown ----------------------------------------------------------------------------------------
def indented_lines(source: str) -> list:
    """Lines indented 4+ columns that Markdown would turn into a code block (outside fences and lists)."""
    found, in_fence, previous = [], False, []
    for line in source.expandtabs(4).splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.strip():
            indent = len(line) - len(line.lstrip())
            if indent >= 4:
                parent = next((p for p in reversed(previous) if len(p) - len(p.lstrip()) < indent), "")
                if not LIST_ITEM.match(parent):
                    found.append(line)
            previous.append(line)
    return found


def visible_text(rendered: str) -> str:
    """What a reader sees outside code: tags, <code> and <pre> contents removed, entities decoded."""
    without_code = re.sub(r"<(pre|code)\b.*?</\1>", " ", rendered, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", without_code))


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_markdown_renders_as_text(path):
    for cell in markdown_cells(read(path)):
        where = f"{path.name}, cell {cell.id}"
        assert not indented_lines(cell.source), (
            f"{where}: lines indented 4+ spaces render as a grey code block; remove the indent: "
            f"{indented_lines(cell.source)[:2]}")
        rendered = markdown_mistune.markdown2html_mistune(cell.source)
        fences = sum(1 for line in cell.source.splitlines() if FENCE.match(line)) // 2
        blocks = rendered.count("<pre")
        assert blocks == fences, f"{where}: {blocks} code blocks rendered but {fences} fenced in the source"
        text = visible_text(rendered)
        for marker in ("**", "`"):
            assert marker not in text, f"{where}: a literal {marker} shows in the rendered text: {text.strip()[:120]}"


def test_exercises_render_as_headings_and_paragraphs():
    exercises = 0
    for path in LESSONS:
        for cell in markdown_cells(read(path)):
            if "Exercise" not in cell.source.split("\n", 1)[0]:
                continue
            exercises += 1
            rendered = markdown_mistune.markdown2html_mistune(cell.source)
            assert rendered.startswith("<h3"), f"{path.name}, cell {cell.id}: an exercise opens with a ### heading"
            assert "<pre" not in rendered, f"{path.name}, cell {cell.id}: exercise text rendered as code"
            assert "<p>" in rendered, f"{path.name}, cell {cell.id}: the question renders as a paragraph"
    assert exercises >= 11


# -- the lint itself ----------------------------------------------------------------------------------
def test_the_indent_rule_allows_lists_and_fences_only():
    assert indented_lines("text\n\n    `x` is **b**") == ["    `x` is **b**"]
    assert indented_lines("- item\n    continued\n  - nested\n      more") == []
    assert indented_lines("```python\n    indented code\n```") == []
    assert indented_lines("- item\n\nparagraph\n    indented") == ["    indented"]
