"""``ember.nn`` layers, one file per family as in ``torch/nn/modules``."""
from ..._submodules import import_parts

import_parts(__name__, [
    "module", "container", "lazy", "linear", "activation", "conv", "pooling", "padding", "fold",
    "upsampling", "pixelshuffle", "channelshuffle", "batchnorm", "instancenorm", "normalization",
    "dropout", "sparse", "flatten", "distance", "loss", "rnn", "attention", "transformer", "positional",
], globals())
