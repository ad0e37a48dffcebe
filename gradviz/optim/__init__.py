"""The part of ``torch.optim`` that tutorials use: the Optimizer base, SGD, Adam, AdamW, RMSprop, Adagrad,
Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and LBFGS, and the learning-rate schedulers of ``lr_scheduler``.

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
# -- NAdam, RAdam, Rprop and ASGD ---------------------------------------------------------------------------------------
from gradviz.optim.nadam_radam import NAdam, RAdam  # noqa: E402
from gradviz.optim.rprop_asgd import ASGD, Rprop  # noqa: E402

__all__ += ["NAdam", "RAdam", "Rprop", "ASGD"]
# -- L-BFGS ---------------------------------------------------------------------------------------------------------------
from gradviz.optim.lbfgs import LBFGS  # noqa: E402

__all__ += ["LBFGS"]
