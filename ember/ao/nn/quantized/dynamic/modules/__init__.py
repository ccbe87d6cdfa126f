"""The dynamic quantized modules, as ``torch.ao.nn.quantized.dynamic.modules``."""
from .linear import Linear
from .rnn import LSTM, GRU, LSTMCell, GRUCell, RNNCell
from .conv import Conv1d, Conv2d, Conv3d

__all__ = ["Linear", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell", "Conv1d", "Conv2d",
           "Conv3d"]
