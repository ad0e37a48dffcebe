"""The static course (scripts/build_site.py): lessons executed and converted, an index that links
them, and a graph on a lesson page that steps in Chromium with every non-file request refused.

Two lessons are built (the builder is the same for all nine; `bash scripts/site.sh` builds them
all): lesson 1, whose graphs are large, and lesson 8, whose exercise graph asks before it
reveals."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytestmark = pytest.mark.browser

REPO = pathlib.Path(__file__).parents[2]
BUILT = ["01_computational_graph", "08_hooks_and_saved_tensors"]


def builder():
    spec = importlib.util.spec_from_file_location("build_site", REPO / "scripts" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("nbconvert")
    pytest.importorskip("nbclient")
    out = tmp_path_factory.mktemp("site")
    written = builder().build_site(out, [REPO / "lessons" / f"{stem}.ipynb" for stem in BUILT], log=lambda line: None)
    assert [path.name for path in written] == ["index.html", *(f"{stem}.html" for stem in BUILT)]
    return out


def test_index_links_every_lesson_and_a_lesson_page_steps_offline(offline_page, site, artifacts):
    page = offline_page
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto((site / "index.html").as_uri())
    links = page.eval_on_selector_all("li a", "els => els.map(e => [e.getAttribute('href'), e.textContent])")
    assert [href for href, _ in links] == [f"{stem}.html" for stem in BUILT]
    assert links[1][1].startswith("Lesson 8 · What the graph keeps") and "`" not in links[1][1]
    page.screenshot(path=str(artifacts / "site-index.png"), full_page=True)

    page.click("li a >> nth=0")
    page.wait_for_selector(".gv-root [data-node-id]")
    assert page.url.endswith("01_computational_graph.html")
    views = page.locator(".gv-root")
    assert views.count() >= 2  # every widget output became a stepping graph
    first = views.first
    first.scroll_into_view_if_needed()
    count = int(first.locator(".gv-status").inner_text().split(" of ")[1])
    for shown in range(1, 4):
        first.locator("[data-action=next]").click()
        assert first.locator(".gv-status").inner_text() == f"Step {shown} of {count}"
        assert first.locator(".gv-current").count() == 1
    page.screenshot(path=str(artifacts / "site-lesson-01-stepped.png"))

    page.click(".gv-site-next")  # the navigation bar leads on to lesson 8
    page.wait_for_selector(".gv-root [data-node-id]")
    quiz = page.locator(".gv-root").last  # the exercise's graph, in predict mode
    quiz.scroll_into_view_if_needed()
    quiz.locator("[data-action=next]").click()
    assert "SinBackward0" in quiz.locator(".gv-predict-prompt").inner_text()  # it asks before it reveals
    quiz.locator("[data-predict-action=reveal]").click()
    assert quiz.locator(".gv-status").inner_text().startswith("Step 1 of")
    assert page.errors == []
    assert all(not url.startswith("file:") for url in page.blocked)  # only nbconvert's CDN extras are refused
