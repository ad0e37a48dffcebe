"""The small part of ``torch.nn`` that the lessons use.

``gv.nn.Linear``, ``gv.nn.Sequential`` and friends are built from ``gv.nn.functional``, so their
graphs carry PyTorch's node names (``AddmmBackward0``, ``ReluBackward0``, ...).
"""
from gradviz.nn import functional
from gradviz.nn.modules import (BCEWithLogitsLoss, Linear, Module, MSELoss, Parameter, ReLU, Sequential, Sigmoid,
                                Tanh)

__all__ = ["functional", "Module", "Parameter", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "MSELoss",
           "BCEWithLogitsLoss"]
