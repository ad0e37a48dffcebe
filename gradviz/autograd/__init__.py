"""Autograd: nodes, the stepping engine, and PyTorch's ``torch.autograd`` entry points."""
from gradviz.autograd import functional, graph
from gradviz.autograd.engine import backward, backward_steps, grad
from gradviz.autograd.function import Function, FunctionCtx, OpFunction, once_differentiable
from gradviz.autograd.node import AccumulateGrad, Node, RemovableHandle
from gradviz.autograd.step import Step
from gradviz.autograd.inference import inference_mode
from gradviz.grad_mode import enable_grad, no_grad, set_grad_enabled
from gradviz.legacy import Variable
from gradviz.autograd import forward_ad  # torch.autograd.forward_ad

__all__ = ["AccumulateGrad", "Function", "FunctionCtx", "Node", "OpFunction", "once_differentiable", "RemovableHandle", "Step", "Variable", "backward", "backward_steps", "functional", "graph",
           "grad", "enable_grad", "inference_mode", "no_grad", "set_grad_enabled",
           "forward_ad"]
# -- gradcheck and gradgradcheck: autograd's gradients against central differences -----------------------------
from gradviz.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402

__all__ += ["gradcheck", "gradgradcheck"]
# -- anomaly mode: detect_anomaly, set_detect_anomaly ---------------------------------------------------------
from gradviz.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: E402

__all__ += ["detect_anomaly", "set_detect_anomaly"]
