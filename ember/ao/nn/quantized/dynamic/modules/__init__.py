"""The dynamic quantized modules, as ``torch.ao.nn.quantized.dynamic.modules``."""
from .linear import Linear
from .rnn import LSTM, GRU, LSTMCell, GRUCell, RNNCell

__all__ = ["Linear", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"]
