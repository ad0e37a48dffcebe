"""``einsum``: sums of products over labelled dims, written with other ops, as PyTorch writes it.

PyTorch has no node of its own for einsum: it takes diagonals for repeated labels, unsqueezes and
permutes each operand so that all share one order of labels (the output's first, then the summed
ones, alphabetically), then multiplies the operands pairwise, left to right, turning each pair with summed
labels into one batched matrix product (``sumproduct_pair``: permute, reshape, ``bmm``, view,
permute), and finally views the summed dims (now of size 1) away. Doing the same steps here gives the same graph: PermuteBackward0, ViewBackward0,
BmmBackward0, SumBackward1 ... with the same saved values.

An ellipsis (``...``) stands for the dims no label names, broadcast between operands and aligned
to the right; inside, each of those dims gets a label of its own that sorts after every letter,
so it takes the place PyTorch gives it (first in an implicit output, before the summed letters
when the output leaves it out). The sublist form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, is the
same equation with numbers 0-51 for the letters A-Z, a-z.
"""
from __future__ import annotations

from gradviz.ops.linalg import bmm
from gradviz.tensor import Tensor


ELLIPSIS_LABELS = "".join(chr(0x2460 + k) for k in range(20))  # one label per dim an ellipsis covers


def _label_order(label: str) -> tuple:
    """PyTorch numbers labels A-Z, then a-z: summed labels come in that order (an ellipsis's dims first)."""
    if label in ELLIPSIS_LABELS:
        return (-1, label)
    return (0 if label.isupper() else 1, label)


def _parse(equation: str, operands) -> tuple:
    count = len(operands)
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise ValueError(f"einsum(): {len(terms)} operands in the equation but {count} were given")
    for term in terms + ([output] if arrow else []):
        for label in term.replace("...", ""):
            if not label.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {equation.index(label)} in the "
                                   f"equation string, subscripts must be in [a-zA-Z]")
    covered = [operand.ndim - (len(term) - 3) for term, operand in zip(terms, operands) if "..." in term]
    width = max(covered, default=0)
    for index, (term, operand) in enumerate(zip(terms, operands)):
        if "..." in term:
            own = operand.ndim - (len(term) - 3)
            if own < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term) - 3}) is more "
                                   f"than the number of dimensions ({operand.ndim}) for operand {index}")
            terms[index] = term.replace("...", ELLIPSIS_LABELS[width - own:width])
    if "..." in output:
        output = output.replace("...", ELLIPSIS_LABELS[:width])
    if not arrow:  # the implicit output: the ellipsis's dims, then the labels that occur once, in order
        every = "".join(terms)
        output = ELLIPSIS_LABELS[:width] + "".join(sorted(
            (label for label in set(every) if every.count(label) == 1 and label not in ELLIPSIS_LABELS),
            key=_label_order))
    return terms, output


def _from_sublists(arguments) -> tuple:
    """``(a, [0, 1], b, [1, 2], [0, 2])`` as ``('AB,BC->AC', a, b)``: 0-25 are A-Z, 26-51 a-z."""
    def letters(sublist) -> str:
        text = ""
        for item in sublist:
            if item is Ellipsis:
                text += "..."
            elif isinstance(item, int) and 0 <= item < 52:
                text += chr(ord("A") + item) if item < 26 else chr(ord("a") + item - 26)
            else:
                raise ValueError(f"einsum(): expected subscript to be within the range [0, 52) but got {item}")
        return text

    operands = arguments[0::2][:len(arguments) // 2]
    terms = [letters(sublist) for sublist in arguments[1::2][:len(arguments) // 2]]
    equation = ",".join(terms) + ("->" + letters(arguments[-1]) if len(arguments) % 2 else "")
    return equation, tuple(operands)


def einsum(equation, *operands) -> Tensor:
    """``einsum('ij,jk->ik', a, b)`` and the other patterns tutorials use (matmul, batch matmul, outer,
    trace, sums over a label, transposes, ``...`` for the leading dims), or the sublist form."""
    if isinstance(equation, Tensor):
        equation, operands = _from_sublists((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, output = _parse(equation, operands)
    contracted = sorted({label for term in terms for label in term if label not in output}, key=_label_order)
    order = list(output) + contracted  # the position every label takes in the aligned operands
    position = {label: index for index, label in enumerate(order)}
    last_operand = {label: max(i for i, term in enumerate(terms) if label in term) for label in order}

    sizes = {}
    for index, (term, operand) in enumerate(zip(terms, operands)):
        for label, size in zip(term, operand.shape):
            seen = sizes.setdefault(label, size)
            if seen != size and 1 not in (seen, size):
                raise RuntimeError(f"einsum(): subscript {label} has size {size} for operand {index} which does not "
                                   f"broadcast with previously seen size {seen}")
            sizes[label] = max(seen, size) if 1 in (seen, size) else seen
    aligned = []
    for term, operand in zip(terms, operands):
        if len(term) != operand.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                               f"the number of dimensions ({operand.ndim}) for operand {len(aligned)} and no "
                               "ellipsis was given")
        aligned.append(_align(operand, term, position, len(order)))

    out_dims = len(output)
    if len(aligned) == 1:
        return _sum_labels_done_after(aligned[0], 0, order, out_dims, last_operand)
    # a summed label that only one operand has is summed there first (keeping the dim, of size 1); one of
    # size 1 in both operands of a product is no sum at all (PyTorch multiplies, then views it away)
    alone = {label for label in contracted if sum(label in term for term in terms) == 1}
    for index, term in enumerate(terms):
        dims = [position[label] for label in order if label in alone and label in term]
        if dims:
            aligned[index] = aligned[index].sum(dims, True)
    result = aligned[0]
    for index in range(1, len(aligned)):
        summed = [position[label] for label in contracted if last_operand[label] == index and label not in alone
                  and (result.shape[position[label]] != 1 or aligned[index].shape[position[label]] != 1)]
        result = result * aligned[index] if not summed else _sum_of_products(result, aligned[index], summed)
    if contracted:  # the summed labels are left as dims of size 1: view them away
        result = result.view(tuple(result.shape[:out_dims]))
    return result


def _align(operand, term: str, position: dict, width: int):
    """The operand with one dim per label, in the common order: repeated labels become a diagonal,
    missing ones a dim of size 1 (unsqueezed at the end), then one permute."""
    perm = [-1] * width
    seen = {}
    dim = 0
    for label in term:
        if label in seen:  # a repeated label: its diagonal, moved to where the label first stood
            operand = operand.diagonal(0, seen[label], dim)
            moved = list(range(operand.ndim - 1))
            moved.insert(seen[label], operand.ndim - 1)
            operand = operand.permute(moved)
            continue
        seen[label] = dim
        perm[position[label]] = dim
        dim += 1
    for index, value in enumerate(perm):
        if value == -1:
            operand = operand.unsqueeze(operand.ndim)
            perm[index] = dim
            dim += 1
    return operand.permute(perm)


def _sum_labels_done_after(result, operand_index: int, order, out_dims: int, last_operand: dict):
    """Squeeze away the summed labels no later operand has where they have size 1, and sum the others
    away in one ``sum``."""
    dim = out_dims
    summed = []
    for label in order[out_dims:]:
        if last_operand[label] == operand_index:
            if result.shape[dim] == 1:
                result = result.squeeze(dim)
                continue
            summed.append(dim)
        dim += 1
    return result.sum(summed) if summed else result


def _sum_of_products(left, right, summed: list):
    """PyTorch's ``sumproduct_pair``: ``(left * right).sum(summed, keepdim=True)`` as one ``bmm`` between
    permutes and views."""
    both, left_only, right_only = [], [], []
    sum_size = both_size = left_size = right_size = 1
    for dim in range(left.ndim):
        in_left, in_right = left.shape[dim] != 1, right.shape[dim] != 1
        if dim in summed:
            if in_left and in_right:
                if left.shape[dim] != right.shape[dim]:
                    raise RuntimeError("non-broadcast dimensions must match")
                sum_size *= left.shape[dim]
            elif in_left:
                left = left.sum(dim, True)
            elif in_right:
                right = right.sum(dim, True)
        elif in_left and in_right:
            if left.shape[dim] != right.shape[dim]:
                raise RuntimeError("non-broadcast dimensions must match")
            both.append(dim)
            both_size *= left.shape[dim]
        elif in_left:
            left_only.append(dim)
            left_size *= left.shape[dim]
        else:
            right_only.append(dim)
            right_size *= right.shape[dim]
    if left_only and right_only and right_only[-1] < left_only[0]:
        # every dim kept from the right operand comes before those from the left one in the output: PyTorch
        # swaps the operands so that bmm makes the result in that order (einsum('ijp,p->ij') with i of size 1)
        left, right = right, left
        left_only, right_only = right_only, left_only
        left_size, right_size = right_size, left_size
    out_size = ([left.shape[d] for d in both] + [left.shape[d] for d in left_only] + [1] * len(summed)
                + [right.shape[d] for d in right_only])
    left_perm = both + left_only + summed + right_only
    right_perm = both + summed + right_only + left_only
    out_perm = [0] * len(left_perm)
    for index, dim in enumerate(left_perm):
        out_perm[dim] = index
    left = left.permute(left_perm).reshape(both_size, left_size, sum_size)
    right = right.permute(right_perm).reshape(both_size, sum_size, right_size)
    return bmm(left, right).view(out_size).permute(out_perm)
