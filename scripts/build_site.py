"""Build the course as a static HTML site: every lesson executed, converted, and an index page.

    python scripts/build_site.py [--out site] [--theme light|dark] [lessons/01_computational_graph.ipynb ...]

(`bash scripts/site.sh` runs this in the project's virtual environment.) Each lesson is run top
to bottom with nbclient, as JupyterLab would save it (outputs kept, no widget state), then
converted by nbconvert's ``lab`` template. With no widget state, nbconvert shows each graph's
``text/html`` fallback (``GraphWidget._repr_mimebundle_``): the one-file export, which draws and
steps the backward pass in the browser with no kernel and no network. The pages link to each
other and to ``index.html``; the folder can be opened from disk or served by any web server.

Only MathJax (for the few ``$$`` formulas in the Markdown) comes from a CDN, as nbconvert
writes it: offline those formulas show as their TeX source; everything else works offline.
"""
from __future__ import annotations

import argparse
import html
import os
import pathlib
import re
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
CELL_TIMEOUT = 120

NAV_CSS = """
.gv-site-nav { display: flex; gap: 1.5em; align-items: baseline; flex-wrap: wrap; margin: 0 0 12px;
  padding: 8px 12px; border-bottom: 1px solid var(--jp-border-color1, #ccc);
  font-family: var(--jp-ui-font-family, system-ui, sans-serif); }
.gv-site-nav a { color: var(--jp-content-link-color, #0969da); text-decoration: none; }
.gv-site-nav a:hover { text-decoration: underline; }
.gv-site-nav .gv-site-course { font-weight: 600; margin-right: auto; }
"""

INDEX = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gradviz: watch autograd work</title>
<style>
:root {{ color-scheme: light dark; }}
body {{ max-width: 52rem; margin: 2rem auto; padding: 0 1rem; font: 16px/1.5 system-ui, sans-serif;
  background: Canvas; color: CanvasText; }}
h1 {{ margin-bottom: 0.2rem; }}
.lead {{ margin-top: 0; opacity: 0.8; }}
ol {{ padding-left: 0; list-style: none; counter-reset: lesson; }}
li {{ margin: 0 0 1rem; padding: 0.8rem 1rem; border: 1px solid color-mix(in srgb, CanvasText 20%, transparent);
  border-radius: 8px; }}
li a {{ font-size: 1.1rem; font-weight: 600; }}
li p {{ margin: 0.3rem 0 0; }}
footer {{ margin-top: 2rem; font-size: 0.9rem; opacity: 0.75; }}
</style>
</head>
<body>
<h1>gradviz: watch autograd work</h1>
<p class="lead">{count} lessons on PyTorch's autograd, run and saved with their outputs. Every graph
steps in your browser: press &#9654;| (Next) under a graph to run the backward pass one node at a
time. No Python, no kernel, no network needed.</p>
<ol>
{items}
</ol>
<footer>Built {built} from the notebooks in <code>lessons/</code> with <code>bash scripts/site.sh</code>.
To run and change the code, open the lessons in JupyterLab (<code>bash scripts/lab.sh</code>) or on Binder.</footer>
</body>
</html>
"""


def lesson_paths(chosen: list | None = None) -> list:
    """The lessons to build, in course order: ``chosen`` or every ``lessons/NN_*.ipynb``."""
    paths = [pathlib.Path(p).resolve() for p in chosen] if chosen else sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))
    return sorted(paths, key=lambda path: path.name)


def title_and_summary(notebook) -> tuple:
    """The lesson's title (its first heading, without '# ') and its first paragraph, as Markdown."""
    first = notebook.cells[0].source if notebook.cells else ""
    lines = first.splitlines()
    title = lines[0].lstrip("# ").strip() if lines else "Lesson"
    paragraph = first.split("\n\n")[1] if "\n\n" in first else ""
    return title, " ".join(paragraph.split())


def inline_html(markdown: str) -> str:
    """A line of Markdown as HTML: escaped, with `code` and **bold** spans (all the index needs)."""
    parts = re.split(r"`([^`]+)`", markdown)  # odd parts are code: no emphasis inside them
    out = []
    for index, part in enumerate(parts):
        text = html.escape(part, quote=False)
        if index % 2:
            out.append(f"<code>{text}</code>")
            continue
        text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
        out.append(re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text))
    return "".join(out)


def plain_text(markdown: str) -> str:
    return re.sub(r"[`*]", "", markdown)


def execute(notebook, workdir: pathlib.Path) -> None:
    """Run the notebook as a learner would, with this checkout first on the kernel's path.
    No widget state is stored, as JupyterLab saves by default: nbconvert then shows each
    widget's text/html fallback, which steps with no kernel."""
    import nbclient

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3", allow_errors=False,
                                     store_widget_state=False, resources={"metadata": {"path": str(workdir)}})
    client.execute(env=env)


def with_navigation(page: str, links: list) -> str:
    """The converted page with a bar at the top: the course index, the previous and next lessons."""
    nav = " ".join(f'<a class="{cls}" href="{html.escape(href)}">{html.escape(text)}</a>' for cls, href, text in links)
    bar = f'<style>{NAV_CSS}</style>\n<nav class="gv-site-nav" aria-label="Course">{nav}</nav>'
    opened = re.search(r"<body[^>]*>", page)
    if not opened:
        raise ValueError("nbconvert's page has no <body>")
    return page[:opened.end()] + "\n" + bar + page[opened.end():]


def build_site(out: pathlib.Path, chosen: list | None = None, theme: str = "light", log=print) -> list:
    """Execute and convert the lessons into ``out`` with an ``index.html``; returns the pages written."""
    import nbformat
    from nbconvert import HTMLExporter

    out.mkdir(parents=True, exist_ok=True)
    paths = lesson_paths(chosen)
    exporter = HTMLExporter(template_name="lab", theme=theme)
    pages, items = [], []
    for number, path in enumerate(paths):
        started = time.perf_counter()
        notebook = nbformat.read(path, as_version=4)
        title, summary = title_and_summary(notebook)
        execute(notebook, path.parent)
        body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": plain_text(title)}})
        links = [("gv-site-course", "index.html", "gradviz: the course")]
        if number > 0:
            links.append(("gv-site-prev", paths[number - 1].stem + ".html", "\u2190 previous lesson"))
        if number + 1 < len(paths):
            links.append(("gv-site-next", paths[number + 1].stem + ".html", "next lesson \u2192"))
        page = out / (path.stem + ".html")
        page.write_text(with_navigation(body, links), encoding="utf-8")
        pages.append(page)
        items.append(f'<li><a href="{html.escape(page.name)}">{inline_html(title)}</a><p>{inline_html(summary)}</p></li>')
        log(f"{page.name}: {time.perf_counter() - started:.1f} s, {page.stat().st_size / 1e6:.1f} MB")
    index = out / "index.html"
    index.write_text(INDEX.format(count=len(paths), items="\n".join(items),
                                  built=time.strftime("%Y-%m-%d")), encoding="utf-8")
    return [index, *pages]


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build every lesson, executed, into a static HTML site.")
    parser.add_argument("lessons", nargs="*", help="lesson notebooks (default: every lessons/NN_*.ipynb)")
    parser.add_argument("--out", default=str(REPO / "site"), help="output folder (default: site/)")
    parser.add_argument("--theme", default="light", choices=["light", "dark"], help="JupyterLab theme of the pages")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    written = build_site(pathlib.Path(args.out), args.lessons or None, args.theme,
                         log=lambda line: print(line, flush=True))  # progress as it happens, also into a log file
    print(f"built {len(written) - 1} lessons in {time.perf_counter() - started:.0f} s: open {written[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
