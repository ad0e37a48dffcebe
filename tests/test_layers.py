"""The package's layers, read off its imports with ``ast`` so that they cannot rot silently.

docs/ARCHITECTURE.md draws the layers; this test holds the code to the drawing. Every module of
``gradviz`` belongs to one layer (a new folder must be given one here), and a module may import
its own layer or a layer of lower rank, at top level or inside a function alike. Folders may not
import each other in a circle, except the core's tensor <-> autograd <-> ops (a Tensor method
calls an op, an op records a node, a node wraps its gradients in Tensors), tensor <-> random (a
factory draws numbers, a Generator hands its state back as a Tensor) and tensor <-> legacy
(``torch.Tensor(data)`` is built by the legacy constructors, which make Tensors).
"""
from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).parents[1] / "gradviz"

# folder (the first name under gradviz; "gradviz" is the package's own __init__) -> (layer, rank)
CORE = ("_dtype", "_device", "_printing", "grad_mode", "tensor", "cuda", "legacy", "accelerator", "random",
        "_float_kernels", "argument_parser", "autograd", "ops", "backends", "nn", "optim",
        "linalg", "special",  # torch.linalg; torch.special
        "func",  # torch.func
        "utils", "serialization")  # torch.utils.data; torch.save / torch.load
LAYERS = {
    "_kinds": ("bottom", 0),
    **{folder: ("core", 1) for folder in CORE},
    "snapshot": ("snapshot", 2),
    "interop": ("interop", 3),
    "render": ("render", 3),
    "widget": ("widget", 4),
    "gradviz": ("facade", 5),
    "lessons": ("lessons", 6),  # what the lesson notebooks share: above everything, imported by nothing
}
ALLOWED_CYCLE = {"tensor", "autograd", "ops", "random", "legacy"}

# Third-party packages that may be imported while a module loads only by these modules (anywhere
# else only inside a function): import gradviz needs numpy alone, and the export needs no anywidget.
HEAVY_AT_IMPORT = {
    "torch": {"gradviz.backends.torch_backend"},
    "anywidget": {"gradviz.widget.widget"},
    "traitlets": {"gradviz.widget.widget"},
    "ipywidgets": set(),
    "IPython": set(),
}


def module_names() -> dict:
    """``{dotted module name: path}`` for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = module_names()


def folder_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "gradviz"


def imports_of(module: str, path: pathlib.Path) -> list:
    """``(imported gradviz module, line)`` for every import statement, wherever it sits."""
    found = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name.split(".")[0] == "gradviz"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "gradviz":
                continue
            for alias in node.names:  # `from gradviz import ops` imports the module gradviz.ops
                submodule = f"{base}.{alias.name}"
                found.append((submodule if submodule in MODULES else base, node.lineno))
    return sorted(set(found), key=lambda item: item[1])


def third_party_imports_at_load(path: pathlib.Path) -> list:
    """``(top-level package, line)`` of the imports that run when the module loads (not in functions)."""
    found = []
    stack = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.module.split(".")[0], node.lineno))
        stack.extend(ast.iter_child_nodes(node))
    return found


def folder_graph() -> dict:
    """``{folder: {folders it imports}}``, self-imports left out."""
    graph = {folder_of(module): set() for module in MODULES}
    for module, path in MODULES.items():
        for target, _ in imports_of(module, path):
            if folder_of(target) != folder_of(module):
                graph[folder_of(module)].add(folder_of(target))
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components with more than one folder (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def test_every_module_belongs_to_a_layer():
    unplaced = sorted({folder_of(module) for module in MODULES} - set(LAYERS))
    assert not unplaced, f"give these folders a layer in tests/test_layers.py and docs/ARCHITECTURE.md: {unplaced}"


def test_no_module_imports_a_layer_above_its_own():
    violations = []
    for module, path in MODULES.items():
        layer, rank = LAYERS[folder_of(module)]
        for target, line in imports_of(module, path):
            target_layer, target_rank = LAYERS[folder_of(target)]
            if target_layer != layer and target_rank >= rank:
                violations.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({layer}) imports {target} "
                                  f"({target_layer})")
    assert not violations, "\n".join(violations)


def test_folders_import_each_other_in_no_circle_but_the_cores():
    assert [component for component in cycles(folder_graph()) if component != ALLOWED_CYCLE] == []


def test_heavy_packages_load_only_where_they_are_needed():
    violations = []
    for module, path in MODULES.items():
        for package, line in third_party_imports_at_load(path):
            if package in HEAVY_AT_IMPORT and module not in HEAVY_AT_IMPORT[package]:
                violations.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {package} when it loads")
    assert not violations, "\n".join(violations)


def test_the_checks_see_what_they_check():
    """The parser finds the imports the layers rest on, so a passing test means something."""
    graph = folder_graph()
    assert {"snapshot", "core"} <= {LAYERS[f][0] for f in graph["interop"]}
    assert "render" in graph["widget"] and "snapshot" in graph["render"]
    assert ALLOWED_CYCLE in cycles(graph)
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    widget_imports = dict(third_party_imports_at_load(MODULES["gradviz.widget.widget"]))
    assert "anywidget" in widget_imports and "torch" not in widget_imports
