"""Which public names of PyTorch's autograd-facing API gradviz lacks, namespace by namespace.

    python -m benchmarks.api_coverage            # counts per namespace, then the missing names
    python -m benchmarks.api_coverage --counts   # counts only

Each namespace is read from torch 2.13 itself (``dir()``, public names only: no leading underscore) and
compared with gradviz's counterpart. ``torch.nn`` counts its Module subclasses only (the layers); ``torch``
counts functions, classes and dtypes but not submodules. Names that have no meaning on a CPU-only autograd
engine that draws graphs (sparse/quantized/distributed/compiler/CUDA internals, ``_foreach``) are listed under
"out of scope" and not counted as missing. The recurrent layers' internal ``torch.lstm``, ``torch.gru``,
``torch.rnn_tanh_cell``... are out of scope (lower case only: ``nn.LSTM``, ``nn.GRUCell``... count).
"""
from __future__ import annotations

import inspect
import re
import sys

OUT_OF_SCOPE = re.compile(
    r"sparse|quantiz|^q_|qint|quint|mkldnn|fbgemm|cudnn|miopen|_foreach|compile|dynamo|export|fx|jit|onnx|"
    r"distributed|rpc|mps|xpu|hpu|mtia|ipu|vulkan|nested|named_|rename|refine_names|align_|unflatten_dense|"
    r"storage|pin_memory|share_memory|is_shared|data_ptr|untyped|vmap_|_nnpack|fake_|functionalize|"
    r"^is_inference$|(?-i:^lstm|^gru|^rnn_)|^quantized|^fused_|^native_|^batch_norm_|^cudnn|^miopen|^conv_tbc|"
    r"^set_flush_denormal|^dsplit|^hsplit|^vsplit|^chalf|^cfloat|^cdouble|complex|^conj_physical|^resolve_|"
    r"^is_conj|^is_neg|^view_as_real|^view_as_complex|^polar|^angle|^imag|^real|^bfloat16|^float8|"
    r"^use_deterministic|^are_deterministic|^get_device_module|^set_warn_always|^is_warn_always|"
    r"^set_printoptions|^get_default_device|^typename|^classproperty|^library|^overrides|^hub|^utils|^testing|"
    r"^sym_|^bits|^u?int[1-7]$|autocast|^has_(lapack|mkl|openmp|spectral)$|^import_ir|^parse_|^merge_type|"
    r"^unify_type|^per_(channel|tensor)|^fork$|^wait$|^while_loop$|^cond$|^thread_safe|profiler|^prepare_multi|"
    r"^get_file_path$|^choose_qparams|^init_num_threads$|^norm_except_dim$|_copy$|^float4|kineto|multithreading|"
    r"view_replay|grad_layout|torch_function|^legacy_contiguous|^channels_last|^jagged$|^strided$|^memory_format$",
    re.IGNORECASE)
# TorchScript's classes and enum values in the ``torch`` namespace: capitalized, not tensors or generators
JIT_CLASS = re.compile(r"^(?!Generator$|Size$|Tensor$|[A-Z][a-z]*Tensor$)[A-Z]")


def _public(names) -> set:
    return {name for name in names if not name.startswith("_")}


def _internal(owner, name: str) -> bool:
    """A submodule, a ``typing`` helper or a TorchScript/JIT class of ``torch._C`` leaking into the namespace."""
    value = getattr(owner, name, None)
    if inspect.ismodule(value):
        return True
    origin = getattr(value, "__module__", None) or ""
    if origin.startswith(("typing", "collections")):
        return True
    return inspect.isclass(value) and origin.startswith("torch._C") and name not in ("Generator", "Size", "dtype",
                                                                                    "device", "finfo", "iinfo")


def namespaces():
    """(label, torch's public names, gradviz's object or None)."""
    import torch
    import torch.nn.functional

    import gradviz

    def public(owner, names=None):
        return {name for name in _public(dir(owner) if names is None else names) if not _internal(owner, name)}

    torch_top = public(torch)
    torch_layers = {name for name in _public(dir(torch.nn)) if inspect.isclass(getattr(torch.nn, name))
                    and issubclass(getattr(torch.nn, name), torch.nn.Module)}
    schedulers = torch.optim.lr_scheduler
    optimizers = public(torch.optim) | {f"lr_scheduler.{name}" for name in public(schedulers)
                                        if inspect.isclass(getattr(schedulers, name))
                                        and getattr(schedulers, name).__module__ == schedulers.__name__}
    return [
        ("torch.Tensor", _public(dir(torch.Tensor)), gradviz.Tensor),
        ("torch", torch_top, gradviz),
        ("torch.nn.functional", {n for n in public(torch.nn.functional) if callable(getattr(torch.nn.functional, n))
                                 and not n.startswith(("has_torch_function", "handle_torch_function"))},
         gradviz.nn.functional),
        ("torch.nn.Module", _public(dir(torch.nn.Module)), gradviz.nn.Module),
        ("torch.nn (layers)", torch_layers, gradviz.nn),
        ("torch.linalg", _public(dir(torch.linalg)), gradviz.linalg),
        ("torch.autograd", public(torch.autograd), gradviz.autograd),
        ("torch.optim", optimizers, gradviz.optim),
    ]


def _has(owner, name: str) -> bool:
    for part in name.split("."):
        if not hasattr(owner, part):
            return False
        owner = getattr(owner, part)
    return True


def coverage():
    """label -> (number of names in scope, missing names (sorted), out-of-scope names (sorted))."""
    report = {}
    for label, names, ours in namespaces():
        scope = {name for name in names if not OUT_OF_SCOPE.search(name)
                 and not (label == "torch" and JIT_CLASS.search(name))}
        missing = sorted(name for name in scope if not _has(ours, name))
        report[label] = (len(scope), missing, sorted(names - scope))
    return report


def main(argv) -> None:
    report = coverage()
    print(f"{'namespace':22} {'in scope':>8} {'missing':>8} {'out of scope':>12}")
    for label, (total, missing, skipped) in report.items():
        print(f"{label:22} {total:8d} {len(missing):8d} {len(skipped):12d}")
    if "--counts" in argv:
        return
    for label, (_, missing, _) in report.items():
        print(f"\n{label} ({len(missing)} missing):")
        print("  " + ", ".join(missing))


if __name__ == "__main__":
    main(sys.argv[1:])
