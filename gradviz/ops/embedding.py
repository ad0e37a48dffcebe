"""Looking rows up in a table: ``embedding`` (EmbeddingBackward0) and ``one_hot`` (no gradient).

``embedding(indices, weight)`` is ``weight[indices]``, recorded as one node with one edge, to the
weight: PyTorch gives the indices no edge at all (they are integers). Its backward adds each
gradient row into the row of the table it was read from, so a row read twice gets both.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.tensor import Tensor

NO_PADDING = 2**64 - 1  # padding_idx = -1 (none), as PyTorch's _saved_padding_idx reads it back (a uint64)


class EmbeddingBackward0(OpFunction):
    """``weight[indices]``: the rows of the table picked by integer indices."""

    inputs = ("weight",)
    derivatives = {"weight": ("embedding_backward(grad, indices, weight_sym_argsize_0, padding_idx, "
                              "scale_grad_by_freq, sparse)", r"\textstyle\sum_{k:\,i_k = r} \bar{y}_k")}

    def forward(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        backend = weight._backend
        ctx.save(indices=indices, padding_idx=padding_idx if padding_idx >= 0 else NO_PADDING,
                 scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, weight_sym_argsize_0=weight.shape[0])
        ctx.padding = padding_idx
        return backend.getitem(weight._data, indices._data)

    def backward(ctx, grad):
        indices, rows, scale_by_frequency = ctx.saved("indices", "weight_sym_argsize_0", "scale_grad_by_freq")
        return dense_backward(ctx.backend, grad, indices, rows, ctx.padding, scale_by_frequency)

    def backward_graph(ctx, grad):
        """PyTorch's ``embedding_dense_backward``, an op of its own (EmbeddingDenseBackwardBackward0)."""
        from gradviz.ops.double_backward import EmbeddingDenseBackwardBackward0

        rows, scale_by_frequency = ctx.saved("weight_sym_argsize_0", "scale_grad_by_freq")
        return EmbeddingDenseBackwardBackward0.apply(grad, ctx.saved_graph("indices"), rows, ctx.padding,
                                                     scale_by_frequency)


def dense_backward(backend, grad, indices, rows: int, padding: int, scale_by_frequency: bool):
    """``embedding_dense_backward``: each gradient row added into the table row it was read from (none into
    the padding row; with ``scale_grad_by_freq`` each divided by how often the batch read that row)."""
    flat = backend.reshape(indices, (-1,))
    grad_rows = backend.reshape(grad, (-1, grad.shape[-1]))
    if padding >= 0:  # the padding row is never trained: its reads send nothing back
        kept = backend.astype(backend.ne(flat, padding), _dtype.from_any(grad.dtype))
        grad_rows = backend.mul(grad_rows, backend.reshape(kept, (-1, 1)))
    if scale_by_frequency:  # each read of a row counts 1 / (how often the batch read that row)
        counts = backend.index_add(backend.full((rows,), 0.0, _dtype.from_any(grad.dtype), backend.device_of(grad)),
                                   (flat,), backend.full(tuple(flat.shape), 1.0, _dtype.from_any(grad.dtype),
                                                         backend.device_of(grad)))
        grad_rows = backend.div(grad_rows, backend.reshape(backend.getitem(counts, flat), (-1, 1)))
    table = backend.full((rows, grad.shape[-1]), 0.0, _dtype.from_any(grad.dtype), backend.device_of(grad))
    return backend.index_add(table, (flat,), grad_rows)


def _check_indices(indices: Tensor) -> None:
    if indices.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_torch_type(indices)} instead (while checking arguments for embedding)")


def _torch_type(tensor: Tensor) -> str:
    return f"torch.{_dtype.SCALAR_TYPE_NAMES[tensor.dtype.name]}Tensor"


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False):
    """Rows of ``weight`` picked by the integer tensor ``input`` (shape ``input.shape + (dim,)``).

    ``max_norm`` first rescales, in place and without recording, each row read whose norm exceeds it."""
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.shape[0] or padding_idx < -weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
    else:
        padding_idx = -1
    _check_indices(input)
    if sparse:
        raise NotImplementedError("gradviz has no sparse tensors: use sparse=False (the gradient is then a dense "
                                  "tensor shaped like the weight)")
    backend = weight._backend
    if input.numel() and (backend.any(backend.lt(input._data, 0)) or backend.any(backend.ge(input._data, weight.shape[0]))):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    return EmbeddingBackward0.apply(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _renorm_rows(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_`` under no_grad: rows read with norm above ``max_norm`` are scaled by
    ``max_norm / (norm + 1e-7)``, in the weight's own memory."""
    from gradviz.grad_mode import no_grad
    from gradviz.tensor import tensor as make_tensor

    rows = sorted({int(i) for i in input.reshape(-1).tolist()})
    if not rows:
        return
    with no_grad():
        picked = weight[make_tensor(rows)]
        norms = picked.norm(norm_type, dim=1).tolist()
        for row, norm in zip(rows, norms):
            if norm > max_norm:
                weight[row].mul_(max_norm / (norm + 1e-7))


def one_hot(tensor, num_classes: int = -1):
    """``tensor``'s class indices as rows of 0s with a 1 at the class (int64, one more dim of size
    ``num_classes``; by default the largest index + 1)."""
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    backend = tensor._backend
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(backend.to_numpy(backend.amax(tensor._data, None, False)).item()) + 1
    if tensor.numel():
        if backend.any(backend.lt(tensor._data, 0)):
            raise RuntimeError("Class values must be non-negative.")
        if backend.any(backend.ge(tensor._data, num_classes)):
            raise RuntimeError("Class values must be smaller than num_classes.")
    shape = tuple(tensor.shape) + (num_classes,)
    data = backend.one_hot_scatter(shape, tensor._data, tensor.ndim, tensor._data.dtype) if tensor.numel() else \
        backend.full(shape, 0, _dtype.int64, backend.device_of(tensor._data))
    return Tensor._make(data, backend=backend)
