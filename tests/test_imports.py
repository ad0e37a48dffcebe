"""``import gradviz`` needs numpy only: torch and the widget stack load lazily."""
import subprocess
import sys


def _modules_after(code: str) -> set:
    script = f"import sys; {code}; print(' '.join(sorted(sys.modules)))"
    output = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return set(output.split())


def test_import_gradviz_does_not_import_torch_or_widgets():
    loaded = _modules_after("import gradviz as gv; x = gv.tensor(2.0, requires_grad=True); (x * x).backward()")
    assert "torch" not in loaded
    assert "anywidget" not in loaded and "ipywidgets" not in loaded


def test_cuda_is_not_available_without_a_cuda_torch():
    import gradviz as gv

    assert gv.cuda.is_available() is False
