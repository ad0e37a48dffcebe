"""Anomaly mode against torch 2.13: the warnings, the forward traceback per node, the NaN check.

The same lines run in both libraries; texts are compared with file paths and line numbers masked,
without the " (Triggered internally at <torch's build path>)" that torch's C++ warning adds, and
without the frames of either library's own Python code.
"""
from __future__ import annotations

import re
import warnings

import pytest

import gradviz as gv


@pytest.fixture(params=["gradviz", "torch"])
def lib(request):
    return gv if request.param == "gradviz" else pytest.importorskip("torch")


def masked(text: str) -> str:
    """Paths and line numbers masked; the frames of either library's own Python code dropped
    (torch's ``Function.apply`` is Python, gradviz's ops are too: neither is the user's code)."""
    text = re.sub(r' \(Triggered internally at [^)]*\)', "", text)
    text = re.sub(r'  File "[^"]*/(torch|gradviz)/[^"]*", line \d+, in [^\n]*\n(    [^\n]*\n)?', "", text)
    return re.sub(r'File "[^"]*", line \d+', 'File "F", line N', text)


def run(program, *args):
    """What a program shows: its result, the error it raised, the warnings it gave (masked)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = program(*args), None
        except Exception as exception:  # the error is part of what is compared
            result, error = None, (type(exception).__name__, str(exception))
    return result, error, [(w.category.__name__, masked(str(w.message))) for w in caught]


def both(program, torch):
    ours, theirs = run(program, gv), run(program, torch)
    assert ours == theirs
    return ours


def nan_in_backward(lib):
    with lib.autograd.detect_anomaly():
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        y = x.sqrt()
        z = (y * 0).sum()
        trace = masked("".join(y.grad_fn.metadata["traceback_"]))
        z.backward()
    return trace


def test_nan_raises_after_the_warning_with_the_forward_traceback(torch):
    result, error, caught = both(nan_in_backward, torch)
    assert error == ("RuntimeError", "Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert caught[0][1].startswith("Anomaly Detection has been enabled.")
    assert caught[1][1].startswith("Error detected in SqrtBackward0. Traceback of forward call that caused the error:")
    assert "y = x.sqrt()" in caught[1][1]


def traceback_is_kept(lib):
    with lib.autograd.detect_anomaly():
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 2).exp()
    return (list(y.grad_fn.metadata), masked("".join(y.grad_fn.metadata["traceback_"])),
            y.grad_fn.next_functions[0][0].metadata["traceback_"][-1].splitlines()[-1].strip())


def test_each_node_keeps_its_forward_traceback(torch):
    result, error, _ = both(traceback_is_kept, torch)
    assert error is None and result[0] == ["traceback_"] and result[2] == "y = (x * 2).exp()"


def no_metadata_when_off(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x.exp()
    return y.grad_fn.metadata, lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()


def test_metadata_is_an_empty_dict_when_off(torch):
    assert both(no_metadata_when_off, torch)[0] == ({}, False, True)


def switches(lib):
    seen = [lib.is_anomaly_enabled()]
    lib.autograd.set_detect_anomaly(True)
    seen.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    lib.autograd.set_detect_anomaly(False)
    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        seen.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    seen.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    with lib.autograd.detect_anomaly(check_nan=False):
        seen.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    seen.append(lib.is_anomaly_enabled())
    try:
        lib.autograd.detect_anomaly()(len)  # not a decorator in torch 2.13
    except TypeError as error:
        seen.append(str(error))
    return seen


def test_switches_warn_and_restore_as_torch_does(torch):
    result, error, caught = both(switches, torch)
    assert error is None and len(caught) == 2  # only detect_anomaly() warns


def check_nan_off(lib):
    with lib.autograd.detect_anomaly(check_nan=False):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        x.sqrt().mul(0).sum().backward()
    return [str(v) for v in x.grad.tolist()]


def test_check_nan_false_lets_nan_through(torch):
    result, error, _ = both(check_nan_off, torch)
    assert error is None and result[0] == "nan"


def inplace_error(lib):
    with lib.autograd.detect_anomaly():
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        z = y * y
        y.add_(1)
        z.sum().backward()


def test_an_inplace_error_names_the_node_and_its_forward_line(torch):
    result, error, caught = both(inplace_error, torch)
    assert error[0] == "RuntimeError" and "modified by an inplace operation" in error[1]
    assert caught[1][1].startswith("Error detected in MulBackward0.") and "z = y * y" in caught[1][1]


def custom_function_error(lib):
    class Broken(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("broken backward")

    with lib.autograd.detect_anomaly():
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        out = Broken.apply(x)
        out.sum().backward()


def test_a_custom_function_failing_in_backward(torch):
    result, error, caught = both(custom_function_error, torch)
    assert error == ("ValueError", "broken backward")
    assert caught[1][1].startswith("Error detected in BrokenBackward.") and "out = Broken.apply(x)" in caught[1][1]


def recorded_before(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt()
    with lib.autograd.detect_anomaly():
        y.mul(0).sum().backward()


def test_a_node_recorded_before_anomaly_mode_says_there_is_no_traceback(torch):
    result, error, caught = both(recorded_before, torch)
    assert caught[1][1] == ("Error detected in SqrtBackward0. No forward pass information available. Enable detect "
                            "anomaly during forward pass for more information.")


def nan_in_grad(lib):
    with lib.autograd.detect_anomaly():
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        y = x.sqrt().sum()
        (gradient,) = lib.autograd.grad(y, x)
    return gradient.tolist()


def test_autograd_grad_checks_too(torch):
    result, error, caught = both(nan_in_grad, torch)
    assert error is None and result[1] == 0.5  # inf is not NaN: nothing raised


def second_order(lib):
    with lib.autograd.detect_anomaly():
        x = lib.tensor([1.0, 4.0], requires_grad=True)
        (gradient,) = lib.autograd.grad(x.sqrt().sum(), x, create_graph=True)
        gradient.sum().backward()
    return x.grad.tolist()


def test_create_graph_passes_run_under_anomaly_mode(torch):
    result, error, _ = both(second_order, torch)
    assert error is None


def test_plain_backward_gradients_are_unchanged_by_anomaly_mode():
    def program():
        x = gv.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = gv.tensor([0.5, -1.0, 2.0], requires_grad=True)
        ((x * w).tanh() * x).sum().backward()
        return x.grad.tolist(), w.grad.tolist()

    plain = program()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gv.autograd.detect_anomaly():
            checked = program()
    assert plain == checked and not gv.is_anomaly_enabled()
