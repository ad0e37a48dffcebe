"""scripts/build_site.py's text helpers (the whole build is tested in Chromium, in
tests/browser/test_site_browser.py): the index turns lesson titles' Markdown into safe HTML."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

REPO = pathlib.Path(__file__).parents[1]


@pytest.fixture(scope="module")
def site():
    spec = importlib.util.spec_from_file_location("build_site", REPO / "scripts" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_inline_markdown_becomes_escaped_html_with_code_spans(site):
    assert site.inline_html("needs `x ** 3` to **free** *it*") == (
        "needs <code>x ** 3</code> to <strong>free</strong> <em>it</em>")
    assert site.inline_html("`<script>` & <img src=x>") == "<code>&lt;script&gt;</code> &amp; &lt;img src=x&gt;"
    assert site.plain_text("Lesson 3 · `zero_()` **now**") == "Lesson 3 · zero_() now"


def test_every_lesson_is_found_in_course_order_with_its_title(site):
    import nbformat

    paths = site.lesson_paths()
    assert [p.name[:2] for p in paths] == sorted(p.name[:2] for p in paths) and len(paths) >= 9
    title, summary = site.title_and_summary(nbformat.read(paths[7], as_version=4))
    assert title.startswith("Lesson 8 · What the graph keeps") and summary.startswith("To run the backward pass")


def test_the_navigation_bar_goes_right_after_body(site):
    page = site.with_navigation('<html><body class="x">text</body></html>', [("gv-site-course", "index.html", "a & b")])
    assert page.startswith('<html><body class="x">\n<style>')
    assert '<a class="gv-site-course" href="index.html">a &amp; b</a></nav>text</body>' in page
