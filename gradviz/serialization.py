"""``torch.save`` / ``torch.load`` in PyTorch's own file format, so that files go both ways.

PyTorch writes a zip archive: ``<name>/data.pkl`` is a pickle of the object in which every tensor is
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`` (a parameter
wraps that in ``_rebuild_parameter``) and every storage is a persistent id
``("storage", torch.FloatStorage, key, "cpu", numel)`` whose bytes are the record ``<name>/data/<key>``;
a few small records say the format's version. Tensors that share memory (a view and its base, a
parameter and its ``state_dict`` entry) share one storage, as in PyTorch.

gradviz writes the same archive without importing torch: those names are written into the pickle as
names (``_Global``), and reading maps them back to gradviz's own builders. So a file that gradviz
saves loads in PyTorch and the other way round. ``load`` defaults to ``weights_only=True`` as PyTorch
2.6+ does: only tensors, parameters, containers and numbers come back, and anything else is refused
with PyTorch's ``UnpicklingError`` (``weights_only=False`` loads gradviz objects pickled whole, such as
a model saved with ``torch.save(model, path)``).
"""
from __future__ import annotations

import _compat_pickle
import collections
import io
import os
import pickle
import secrets
import zipfile

import numpy as np

_STORAGES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
             "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}
_ALIGNMENT = 64  # PyTorch aligns every storage record's bytes to this (".storage_alignment")


class _Global:
    """A name in PyTorch's namespace (``torch._utils._rebuild_tensor_v2``), written into the pickle as
    a ``GLOBAL`` without importing it."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # (pickle asks that what rebuilds an object be callable; this one is only written)
        raise TypeError(f"{self.module}.{self.name} is PyTorch's; gradviz only writes its name")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_STORAGE_GLOBALS = {dtype: _Global("torch", name) for dtype, name in _STORAGES.items()}


class _Storage:
    """One block of memory, as a flat array: what a persistent id in the pickle stands for."""

    __slots__ = ("key", "flat")

    def __init__(self, key: str, flat: np.ndarray):
        self.key, self.flat = key, flat


# -- save --------------------------------------------------------------------------------------------------------
class _Pickler(pickle._Pickler):  # the Python pickler: its ``save`` can write a _Global as a GLOBAL
    def __init__(self, file):
        super().__init__(file, protocol=2)
        self.storages = {}  # id of the array that owns the memory -> _Storage
        self.owners = []  # keeps those arrays alive while their ids are keys

    def save(self, obj, save_persistent_id=True):
        if type(obj) is _Global:
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
            self.memoize(obj)
            return
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if type(obj) is _Storage:
            flat = obj.flat
            return ("storage", _STORAGE_GLOBALS[flat.dtype.name], obj.key, "cpu", flat.size)
        return None

    def reducer_override(self, obj):
        from gradviz.nn.modules import Parameter
        from gradviz.tensor import Tensor

        if isinstance(obj, Parameter):
            plain = Tensor._make(obj._data, backend=obj._backend)
            return _REBUILD_PARAMETER, (plain, obj.requires_grad, collections.OrderedDict())
        if isinstance(obj, Tensor):
            storage, offset, size, stride = self._place(obj._backend.to_numpy(obj._data))
            if obj.numel() == 0:  # numpy's strides of an empty array are all 0; PyTorch's are the tensor's own
                stride = obj.stride()
            return _REBUILD_TENSOR, (storage, offset, size, stride, obj.requires_grad, collections.OrderedDict())
        return NotImplemented

    def _place(self, array: np.ndarray) -> tuple:
        """``(storage, offset, size, stride)`` of ``array`` in the memory it shares with other tensors
        (in elements, as PyTorch counts), or in a storage of its own when its layout cannot be said so."""
        owner = array
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        itemsize = array.itemsize
        offset = array.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
        strides = array.strides
        if (owner.dtype != array.dtype or not owner.flags.c_contiguous or offset % itemsize
                or any(s < 0 or s % itemsize for s in strides)):
            owner, offset, strides = np.ascontiguousarray(array), 0, None
        storage = self.storages.get(id(owner))
        if storage is None:
            storage = self.storages[id(owner)] = _Storage(str(len(self.storages)), owner.reshape(-1))
            self.owners.append(owner)
        stride = tuple(s // itemsize for s in (strides if strides is not None else owner.strides))
        return storage, offset // itemsize, tuple(array.shape), stride


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Write ``obj`` (a state dict, tensors, a whole model...) to ``f`` (a path or a binary file) in
    PyTorch's zip format."""
    buffer = io.BytesIO()
    pickler = _Pickler(buffer)
    pickler.dump(obj)
    name = os.path.splitext(os.path.basename(os.fspath(f)))[0] if isinstance(f, (str, os.PathLike)) else "archive"
    records = [("data.pkl", buffer.getvalue()), (".format_version", b"1"),
               (".storage_alignment", str(_ALIGNMENT).encode()), ("byteorder", b"little")]
    records += [(f"data/{s.key}", s.flat.astype(s.flat.dtype.newbyteorder("<"), copy=False).tobytes())
                for s in pickler.storages.values()]
    records += [("version", b"3\n"), (".data/serialization_id", str(int.from_bytes(secrets.token_bytes(16))).encode())]
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            _write_archive(file, name, records)
    else:
        _write_archive(f, name, records)


def _write_archive(file, name: str, records: list) -> None:
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED) as archive:
        for record, data in records:
            info = zipfile.ZipInfo(f"{name}/{record}", date_time=(1980, 1, 1, 0, 0, 0))
            if record.startswith("data/"):  # pad the local header so that the bytes start aligned
                start = file.tell() + 30 + len(info.filename.encode()) + 4
                info.extra = b"FB" + (-start % _ALIGNMENT).to_bytes(2, "little") + b"Z" * (-start % _ALIGNMENT)
            archive.writestr(info, data)


# -- load --------------------------------------------------------------------------------------------------------
def _rebuild_tensor(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    from gradviz.tensor import Tensor

    flat = storage
    array = np.lib.stride_tricks.as_strided(flat[offset:], shape=tuple(size),
                                            strides=tuple(s * flat.itemsize for s in stride))
    tensor = Tensor._make(array)
    tensor.requires_grad_(bool(requires_grad))
    return tensor


def _rebuild_parameter(data, requires_grad, backward_hooks, *state):
    from gradviz.nn.modules import Parameter

    return Parameter(data, requires_grad=requires_grad)


_TORCH_NAMES = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
                ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
                ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter}
_TORCH_NAMES.update({("torch", name): dtype for dtype, name in _STORAGES.items()})
_SAFE = {("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"),
         ("builtins", "complex"), ("builtins", "bytearray")}
_ALLOWED: set = set()  # (module, name) of the classes and functions add_safe_globals allowed


def add_safe_globals(safe_globals: list) -> None:
    """Let ``load(..., weights_only=True)`` rebuild these classes or functions too."""
    _ALLOWED.update((item.__module__, item.__qualname__) for item in safe_globals)


def get_safe_globals() -> list:
    return sorted(f"{module}.{name}" for module, name in _ALLOWED)


def clear_safe_globals() -> None:
    _ALLOWED.clear()


class safe_globals:
    """Context manager: ``add_safe_globals`` for the block only."""

    def __init__(self, safe_globals: list):
        self.names = {(item.__module__, item.__qualname__) for item in safe_globals}

    def __enter__(self):
        self.added = self.names - _ALLOWED
        _ALLOWED.update(self.added)

    def __exit__(self, *exc_info):
        _ALLOWED.difference_update(self.added)
        return False


def _weights_only_message(module: str, name: str) -> str:
    full = f"{module}.{name}"
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those "
            "steps only if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed the "
            "default value of the `weights_only` argument in `torch.load` from `False` to `True`. Re-running "
            "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
            "execution. Do it only if you got the file from a trusted source.\n\t(2) Alternatively, to load with "
            "`weights_only=True` please check the recommended steps in the following error message.\n\t"
            f"WeightsUnpickler error: Unsupported global: GLOBAL {full} was not an allowed global by default. Please "
            f"use `torch.serialization.add_safe_globals([{full}])` or the `torch.serialization.safe_globals([{full}])` "
            "context manager to allowlist this global if you trust this class/function.\n\nCheck the documentation of "
            "torch.load to learn more about types accepted by default with weights_only "
            "https://pytorch.org/docs/stable/generated/torch.load.html.")


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, archive: zipfile.ZipFile, prefix: str, weights_only: bool):
        super().__init__(file)
        self.archive, self.prefix, self.weights_only = archive, prefix, weights_only
        self.storages = {}

    def find_class(self, module, name):
        if (module, name) in _compat_pickle.NAME_MAPPING:  # protocol 2 writes Python 2's names (__builtin__.set)
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        known = _TORCH_NAMES.get((module, name))
        if known is not None:
            return known
        if (module, name) == ("torch", "Size"):
            from gradviz.tensor import Size

            return Size
        if (module, name) == ("torch", "device"):
            from gradviz._device import device

            return device
        if module == "torch" and name.endswith("Storage"):
            raise pickle.UnpicklingError(f"gradviz has no dtype for torch.{name}: save the tensors as float32 or "
                                         "float64 in PyTorch, then load them here")
        if self.weights_only and (module, name) not in _SAFE and (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(_weights_only_message(module, name))
        return super().find_class(module, name)

    def persistent_load(self, pid):
        kind, dtype_name, key, location, numel = pid
        if kind != "storage":
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        flat = self.storages.get(key)
        if flat is None:
            raw = self.archive.read(f"{self.prefix}/data/{key}")
            dtype = np.dtype(dtype_name)
            flat = self.storages[key] = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=True)
        return flat


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, mmap=None,
         **pickle_load_args):
    """Read what ``save`` (gradviz's or PyTorch's) wrote. Everything loads on the CPU; a device given as
    ``map_location`` (``"cuda"``) moves the tensors there afterwards (a function or dict is accepted and
    changes nothing, every storage being a CPU one already)."""
    weights_only = True if weights_only is None else bool(weights_only)
    opened = open(f, "rb") if isinstance(f, (str, os.PathLike)) else None
    try:
        with zipfile.ZipFile(opened or f) as archive:
            pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
            if not pickles:
                raise RuntimeError("gradviz.load reads the zip files that torch.save writes (PyTorch 1.6 and later)")
            prefix = pickles[0][:-len("/data.pkl")]
            result = _Unpickler(io.BytesIO(archive.read(pickles[0])), archive, prefix, weights_only).load()
    finally:
        if opened is not None:
            opened.close()
    if isinstance(map_location, str) or type(map_location).__name__ == "device":
        if str(map_location) != "cpu":
            result = _moved(result, map_location)
    return result


def _moved(value, device):
    from gradviz.tensor import Tensor

    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return type(value)((key, _moved(item, device)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(item, device) for item in value)
    return value
