"""The small part of ``torch.nn`` that the lessons use.

``gv.nn.Linear``, ``gv.nn.Sequential`` and friends are built from ``gv.nn.functional``, so their
graphs carry PyTorch's node names (``AddmmBackward0``, ``ReluBackward0``, ...).
"""
from gradviz.nn import functional, init, utils
from gradviz.nn.modules import (CELU, SELU, BatchNorm1d, BatchNorm2d, BCELoss, BCEWithLogitsLoss, CosineSimilarity,
                                Hardsigmoid, Hardswish, LogSigmoid, Mish, PReLU, Softmin, Softsign, Tanhshrink,
                                Unflatten, CrossEntropyLoss, Dropout, ELU, Embedding, Flatten, GELU,
                                Hardtanh, LayerNorm,
                                HuberLoss, Identity, KLDivLoss, L1Loss, LeakyReLU, Linear, LogSoftmax, Module, ModuleDict,
                                ModuleList, MSELoss, ParameterDict, ParameterList,
                                NLLLoss, Parameter, ReLU, ReLU6, Sequential, Sigmoid, SiLU, SmoothL1Loss, Softmax,
                                Softplus, Tanh)

__all__ = ["functional", "init", "utils", "Module", "Parameter", "Linear", "Sequential", "Identity", "Flatten", "Dropout",
           "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "MSELoss", "BCEWithLogitsLoss", "NLLLoss",
           "CrossEntropyLoss", "LeakyReLU", "GELU", "SiLU", "ELU", "Softplus", "Hardtanh", "ReLU6", "BCELoss", "L1Loss",
           "SmoothL1Loss", "HuberLoss", "KLDivLoss", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
           "SELU", "CELU", "LogSigmoid", "Softsign", "Mish", "Hardswish", "Hardsigmoid", "PReLU", "Tanhshrink", "Softmin",
           "CosineSimilarity", "Unflatten"]
# -- the padding layers ------------------------------------------------------------------------------
from gradviz.nn.padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d,  # noqa: E402
                                ConstantPad2d, ConstantPad3d, PADDING_LAYERS, ReflectionPad1d, ReflectionPad2d,
                                ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d,
                                ZeroPad2d, ZeroPad3d)

__all__ += list(PADDING_LAYERS)
# -- glu, the shrinks, threshold, rrelu, pairwise distance ----------------------------------------------------
from gradviz.nn.modules import GLU, Hardshrink, PairwiseDistance, RReLU, Softshrink, Threshold  # noqa: E402

__all__ += ["GLU", "Softshrink", "Hardshrink", "Threshold", "RReLU", "PairwiseDistance"]
# -- convolution and pooling ----------------------------------------------------------------------------------
from gradviz.nn import grad  # noqa: E402
from gradviz.nn.modules import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, Conv1d,  # noqa: E402
                                Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, MaxPool1d, MaxPool2d)

__all__ += ["grad", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
            "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d"]
# -- more losses: margin ranking, hinge embedding, soft margin, Poisson and Gaussian NLL, triplet margin -----------
from gradviz.nn.modules import (GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss, PoissonNLLLoss,  # noqa: E402
                                SoftMarginLoss, TripletMarginLoss)

__all__ += ["MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
            "TripletMarginLoss"]
# -- more normalization layers ------------------------------------------------------------------------------------
from gradviz.nn.modules import (BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,  # noqa: E402
                                RMSNorm)

__all__ += ["BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm"]
# -- resampling layers ----------------------------------------------------------------------------------------------
from gradviz.nn.modules import (ChannelShuffle, PixelShuffle, PixelUnshuffle, Upsample,  # noqa: E402
                                UpsamplingBilinear2d, UpsamplingNearest2d)

__all__ += ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
            "ChannelShuffle"]
# -- recurrent layers: RNN, GRU, LSTM and their cells ---------------------------------------------------------
from gradviz.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402

__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
# -- attention: multi-head attention (nn/attention.py) and the transformer layers (nn/transformer.py) ------------
from gradviz.nn.attention import MultiheadAttention  # noqa: E402
from gradviz.nn.transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: E402
                                    TransformerEncoder, TransformerEncoderLayer)

__all__ += ["MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerEncoderLayer", "TransformerDecoder",
            "TransformerDecoderLayer"]
# -- the rest of pooling, fold/unfold and local response normalization ---------------------------------------------
from gradviz.nn.modules import (AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d,  # noqa: E402
                                AvgPool3d, Fold, LocalResponseNorm, LPPool1d, LPPool2d, LPPool3d, MaxPool3d,
                                MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, Unfold)

__all__ += ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
            "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d", "Fold", "Unfold",
            "LocalResponseNorm"]
