"""Hashes of every byte a browser sees for a set of graphs: the export page, and a live widget's
buffers (the packed JSON it sends) and plain Python traits.

A change that should only make shows and exports faster must leave every hash the same: run it
before and after and compare (``--save before.json``, then ``--check before.json``).

Run from the repository root: ``python benchmarks/wire_hashes.py [--save FILE | --check FILE]``.
Needs anywidget (the widget part); the torch graphs need torch.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import pathlib
import re
import sys
import tempfile
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the shared shapes

WIDGET_TRAITS = ("graph", "graph_layout", "trace", "step_index", "note", "grad_updates")


def gradviz_cases() -> dict:
    import gradviz as gv
    from fixtures import shapes

    x = gv.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, 4.0]], requires_grad=True)
    w = gv.tensor([0.3, -0.7, 1.1], requires_grad=True)
    y = x.clone()
    y[0] = x[0] * w  # a view's step (CopySlices)
    big = gv.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, 4.0]], requires_grad=True)
    wide = big
    for i in range(130):  # more than PACK_ABOVE nodes, with views and broadcasting
        wide = (wide * w).tanh() + big[:, :1] * float(i)
    return {"chain 40": (shapes.chain(40), {}), "chain 300": (shapes.chain(300), {}),
            "chain 5000": (shapes.chain(5000), {}), "fan-out 300": (shapes.fan_out(300), {}),
            "rnn 90": (shapes.unrolled_rnn(90), {}), "copy-slices": ((y * y).sum(), {"x": x, "w": w}),
            "wide views": (wide.sum(), {"big": big, "w": w}), "non-scalar": (x * w, {"x": x})}


def torch_cases() -> dict:
    try:
        import torch
    except ImportError:
        return {}
    from bench_torch_graphs import deep_chain
    from fixtures import shapes

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    mlp = model(torch.randn(5, 3)).sum()
    a = torch.randn(4, 4, requires_grad=True)
    b = (a * 2).view(16)
    b[3] = 0.0  # a torch view's CopySlices
    half = torch.randn(8, 8, dtype=torch.bfloat16, requires_grad=True)
    return {"torch mlp": (mlp, None, model), "torch chain 400": (shapes.chain(400, lib=torch), {}, None),
            "torch 60 layers": (*deep_chain(60), None), "torch views": ((b * b).sum(), {"a": a}, None),
            "torch bf16": ((half.float() ** 2).sum(), {"half": half}, None)}


def digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()[:16]


def hashes_of(output, names, model) -> dict:
    import gradviz as gv
    from gradviz.widget.widget import ENCODED_TRAITS, _json_buffer

    found = {}
    with tempfile.TemporaryDirectory() as folder:
        page = gv.export_html(output, pathlib.Path(folder) / "page.html", names=names, model=model)
        found["export"] = digest(page.read_bytes())
    widget = gv.GraphWidget(output, names=names, model=model)
    try:
        for name in ENCODED_TRAITS:
            found[f"sent {name}"] = digest(_json_buffer(getattr(widget, name), widget))
        for name in WIDGET_TRAITS:
            found[f"python {name}"] = digest(json.dumps(getattr(widget, name), sort_keys=True, allow_nan=True))
        embed = json.dumps(widget._get_embed_state(), sort_keys=True, allow_nan=True, default=repr)
        found["embed"] = digest(re.sub(r"IPY_MODEL_[0-9a-f]+", "IPY_MODEL_", embed))  # ids differ per run
        found["html fallback"] = digest(widget.to_html())
    finally:
        widget.close()
    return found


def all_hashes() -> dict:
    counter = itertools.count()  # the page's element ids, made the same on every run
    uuid.uuid4 = lambda: uuid.UUID(int=next(counter))
    found = {name: hashes_of(output, names, None) for name, (output, names) in gradviz_cases().items()}
    found.update({name: hashes_of(*case) for name, case in torch_cases().items()})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--save", type=pathlib.Path, help="write the hashes to this JSON file")
    group.add_argument("--check", type=pathlib.Path, help="compare with the hashes in this JSON file")
    args = parser.parse_args()
    found = all_hashes()
    if args.save:
        args.save.write_text(json.dumps(found, indent=1, sort_keys=True))
    if args.check:
        expected = json.loads(args.check.read_text())
        differ = [(case, key) for case in sorted(set(expected) | set(found))
                  for key in sorted(set(expected.get(case, {})) | set(found.get(case, {})))
                  if expected.get(case, {}).get(key) != found.get(case, {}).get(key)]
        for case, key in differ:
            print(f"DIFFERS: {case}: {key}")
        print(f"{sum(len(v) for v in found.values()) - len(differ)} same, {len(differ)} differ")
        sys.exit(1 if differ else 0)
    if not args.save and not args.check:
        print(json.dumps(found, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
