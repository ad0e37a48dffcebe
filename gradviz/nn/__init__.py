"""The small part of ``torch.nn`` that the lessons use.

``gv.nn.Linear``, ``gv.nn.Sequential`` and friends are built from ``gv.nn.functional``, so their
graphs carry PyTorch's node names (``AddmmBackward0``, ``ReluBackward0``, ...).
"""
from gradviz.nn import functional, init
from gradviz.nn.modules import (BCEWithLogitsLoss, CrossEntropyLoss, Dropout, Flatten, Identity, Linear, LogSoftmax,
                                Module, MSELoss, NLLLoss, Parameter, ReLU, Sequential, Sigmoid, Softmax, Tanh)

__all__ = ["functional", "init", "Module", "Parameter", "Linear", "Sequential", "Identity", "Flatten", "Dropout",
           "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "MSELoss", "BCEWithLogitsLoss", "NLLLoss",
           "CrossEntropyLoss"]
