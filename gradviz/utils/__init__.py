"""``torch.utils``: the part a course meets, ``torch.utils.data`` (datasets, samplers, ``DataLoader``)."""
from gradviz.utils import data

__all__ = ["data"]
