"""The part of ``torch.optim`` that tutorials use: the Optimizer base, SGD, Adam, AdamW, RMSprop and Adagrad,
and the learning-rate schedulers of ``lr_scheduler``.

Each ``step()`` follows PyTorch's single-tensor code (what it runs on the CPU) line for line.
"""
from gradviz.optim import lr_scheduler
from gradviz.optim.adagrad import Adagrad
from gradviz.optim.adam import Adam, AdamW
from gradviz.optim.optimizer import Optimizer
from gradviz.optim.rmsprop import RMSprop
from gradviz.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
# -- Adadelta and Adamax (the API sweep) -------------------------------------------------------------------------------
from gradviz.optim.adadelta_adamax import Adadelta, Adamax  # noqa: E402

__all__ += ["Adadelta", "Adamax"]
