"""The small part of ``torch.optim`` that the lessons use: the Optimizer base and SGD."""
from gradviz.optim.sgd import SGD, Optimizer

__all__ = ["Optimizer", "SGD"]
