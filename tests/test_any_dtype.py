"""Any dtype and layout torch can put in a graph is summarised safely, in the snapshot and the
trace: bfloat16, float16, complex, sparse gradients; showing and exporting such a graph works
and the observed steps still match torch's own engine."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("anywidget")

from gradviz.interop.torch_steps import record_torch_backward  # noqa: E402
from gradviz.snapshot import observe_steps  # noqa: E402
from gradviz.snapshot.model import NO_VALUES, summarize  # noqa: E402
from gradviz.widget import export_html, show  # noqa: E402
from orders import torch_order  # noqa: E402


def bfloat16_mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).to(torch.bfloat16)
    return model(torch.randn(5, 3, dtype=torch.bfloat16)).pow(2).mean(), model


def float16_mixed():
    a = torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True)
    b = torch.tensor([0.5, 4.0], requires_grad=True)
    return (a * b).sum(), None


def complex_product():
    z = torch.tensor([1 + 2j, -0.5 + 1j], requires_grad=True)
    return (z * z.conj()).real.sum() + (z.abs() ** 2).sum(), None


def sparse_gradient():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(10, 3, sparse=True)
    return embedding(torch.tensor([1, 4, 4])).sum(), embedding


PROGRAMS = {"bfloat16": bfloat16_mlp, "float16": float16_mixed, "complex": complex_product,
            "sparse": sparse_gradient}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_show_and_export_summarise_every_value(name, tmp_path):
    loss, model = PROGRAMS[name]()
    widget = show(loss, names={"loss": loss}, model=model)
    assert widget.note == "" and len(widget.trace) > 1
    json.dumps(widget.trace)
    entries = [entry[key] for entry in widget.trace for key in ("grad_before", "grad_after") if entry[key]]
    entries += [g for entry in widget.trace for g in entry["grad_inputs"] + entry["grad_outputs"] if g]
    assert entries and all(summary["preview"] != NO_VALUES for summary in entries)
    assert export_html(loss, tmp_path / "page.html", names={}, model=model).stat().st_size > 0
    widget.close()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_observed_steps_match_torchs_engine_for_every_dtype(name):
    loss, _ = PROGRAMS[name]()
    observed = list(observe_steps(loss))
    assert [step.name for step in observed] == torch_order(PROGRAMS[name]()[0])
    recorded = record_torch_backward(PROGRAMS[name]()[0], retain_graph=True)
    for mine, theirs in zip(observed, recorded):
        for a, b in zip(mine.grad_inputs + ((mine.grad_after,) if mine.is_accumulate else ()),
                        theirs.grad_inputs + ((theirs.grad_after,) if theirs.is_accumulate else ())):
            assert (a is None) == (b is None)
            if a is not None:
                assert a.dtype == b.dtype and a.layout == b.layout
                assert torch.allclose(comparable(a), comparable(b), rtol=1e-2)


def comparable(tensor):
    """Dense, and widened where allclose needs it (bfloat16, float16); complex stays complex."""
    tensor = tensor.to_dense() if tensor.is_sparse else tensor
    return tensor if tensor.is_complex() else tensor.double()


def test_a_sparse_summary_says_it_shows_stored_values():
    summary = summarize(torch.zeros(1000, 3).index_fill(0, torch.tensor([7]), 2.0).to_sparse())
    assert summary.shape == (1000, 3) and summary.dtype == "float32"
    assert summary.preview.startswith("sparse_coo, stored: ") and "2." in summary.preview


def test_tensors_without_readable_values_say_so():
    summary = summarize(torch.empty(2, 3, device="meta"))
    assert summary.shape == (2, 3) and summary.preview == NO_VALUES


def test_dtypes_numpy_lacks_keep_their_own_name():
    assert summarize(torch.tensor([1.5], dtype=torch.bfloat16)).dtype == "bfloat16"
    assert summarize(torch.tensor([1.5], dtype=torch.bfloat16)).preview == "[1.5]"
    conjugate = summarize(torch.tensor([1 + 2j], dtype=torch.complex64).conj())  # a view with the conj bit
    assert conjugate.dtype == "complex64" and "-2" in conjugate.preview
