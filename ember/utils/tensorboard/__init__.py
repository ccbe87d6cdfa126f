"""``torch.utils.tensorboard``: ``SummaryWriter`` writing TensorBoard event files through
``tensorboardX`` (``pip install 'ember[tb]'``), imported when a writer is first made."""
from . import writer  # noqa: F401
from .writer import SummaryWriter  # noqa: F401

__all__ = ["SummaryWriter", "FileWriter"]

_ABSENT = {
    "RecordWriter": "it is tensorboard's low-level record file; SummaryWriter and FileWriter "
                    "write the event files",
    "summary": "its functions build summary protos from torch tensors; the SummaryWriter "
               "methods take Ember tensors",
}


def __getattr__(name):
    if name == "FileWriter":
        # A subclass of tensorboardX's, so it exists only once tensorboardX can be imported.
        return writer._file_writer_class()
    if name in _ABSENT:
        raise AttributeError(f"ember.utils.tensorboard has no {name}: {_ABSENT[name]}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
