"""``SummaryWriter``, as ``torch.utils.tensorboard.SummaryWriter``.

Event files are written by ``tensorboardX`` (the ``tb`` extra); this class converts Ember
tensors to NumPy first (``_convert_np``) and keeps torch's signatures and defaults.
``add_graph`` is Ember's own (``_graph.py``): tensorboardX's traces with torch.jit.

tensorboardX looks for torch when it is imported and would import it if installed; Ember must
not pull torch in, so torch's import is blocked for the duration of tensorboardX's (it takes
the branch it takes without torch) unless the program imported torch itself."""
import os
import socket
import sys
from datetime import datetime

from ._convert_np import make_np, make_scalar

__all__ = ["SummaryWriter"]


def _tensorboardX():
    module = sys.modules.get("tensorboardX")
    if module is not None:
        return module
    blocked = "torch" not in sys.modules
    if blocked:
        sys.modules["torch"] = None  # makes ``import torch`` raise ImportError
    try:
        import tensorboardX
        import tensorboardX.summary  # noqa: F401
    except ImportError as e:
        raise ImportError("ember.utils.tensorboard.SummaryWriter needs the 'tensorboardX' "
                          "package: pip install 'ember[tb]'") from e
    finally:
        if blocked and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return tensorboardX


_FILE_WRITER = []


def _file_writer_class():
    """``FileWriter(log_dir, max_queue, flush_secs, filename_suffix)``: events and summaries
    appended to one event file, as torch's (tensorboardX's writer, torch's argument name)."""
    if not _FILE_WRITER:
        tbx = _tensorboardX()

        class FileWriter(tbx.FileWriter):
            __doc__ = _file_writer_class.__doc__

            def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
                super().__init__(str(log_dir), max_queue, flush_secs, filename_suffix)

        FileWriter.__module__ = "ember.utils.tensorboard.writer"
        FileWriter.__qualname__ = "FileWriter"
        _FILE_WRITER.append(FileWriter)
    return _FILE_WRITER[0]


def _default_log_dir(comment):
    # torch's default: runs/<Mon><DD>_<HH>-<MM>-<SS>_<host><comment>
    current_time = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", current_time + "_" + socket.gethostname() + comment)


class SummaryWriter:
    """Writes scalars, histograms, images, text, hyperparameters, embeddings, PR curves and
    graphs to ``log_dir`` for TensorBoard."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        tbx = _tensorboardX()
        if not log_dir:
            log_dir = _default_log_dir(comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writer = tbx.SummaryWriter(logdir=self.log_dir, purge_step=purge_step,
                                         max_queue=max_queue, flush_secs=flush_secs,
                                         filename_suffix=filename_suffix)
        self._scalar_writers = {}  # add_scalars' run folder -> its FileWriter

    def get_logdir(self):
        return self.log_dir

    def _get_file_writer(self):
        return self._writer._get_file_writer()

    @property
    def file_writer(self):
        return self._get_file_writer()

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """``new_style`` writes the value as a tensor summary of the scalars plugin (float64
        with ``double_precision``), as torch's; otherwise a classic simple value."""
        value, step = make_scalar(scalar_value), make_scalar(global_step)
        if not new_style:
            self._writer.add_scalar(tag, value, step, walltime)
            return
        from tensorboardX.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
        if double_precision:
            tensor = tensor_pb2.TensorProto(double_val=[float(value)], dtype=types_pb2.DT_DOUBLE,
                                            tensor_shape=tensor_shape_pb2.TensorShapeProto())
        else:
            tensor = tensor_pb2.TensorProto(float_val=[float(value)], dtype=types_pb2.DT_FLOAT,
                                            tensor_shape=tensor_shape_pb2.TensorShapeProto())
        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=tag, tensor=tensor, metadata=metadata)])
        self._get_file_writer().add_summary(summary, step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each ``tag`` of the dict as its own run ``<log_dir>/<main_tag>_<tag>``."""
        # torch's layout (tensorboardX nests <main_tag>/<tag> instead): one writer per run
        # folder, kept open for the next step.
        tbx = _tensorboardX()
        for tag, value in tag_scalar_dict.items():
            run_dir = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + tag)
            writer = self._scalar_writers.get(run_dir)
            if writer is None:
                writer = self._scalar_writers[run_dir] = tbx.FileWriter(
                    run_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            writer.add_summary(tbx.summary.scalar(main_tag, make_scalar(value)),
                               make_scalar(global_step), walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        raise NotImplementedError("add_tensor writes a TensorProto summary that tensorboardX "
                                  "cannot encode; use add_histogram or add_scalar")

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """A histogram of ``values`` (a tensor, e.g. a parameter or its ``.grad``); ``bins`` is
        NumPy's choice (``'tensorflow'``: TensorFlow's exponential buckets)."""
        self._writer.add_histogram(tag, make_np(values), make_scalar(global_step), bins,
                                   walltime, max_bins)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        self._writer.add_histogram_raw(tag, make_scalar(min), make_scalar(max), make_scalar(num),
                                       make_scalar(sum), make_scalar(sum_squares),
                                       list(make_np(bucket_limits).ravel()),
                                       list(make_np(bucket_counts).ravel()),
                                       make_scalar(global_step), walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """One image: float values in [0, 1] or uint8 in [0, 255], laid out as
        ``dataformats`` (CHW, HWC, HW). A batch composed with ``ember.vision.utils.make_grid``
        is one CHW image."""
        self._writer.add_image(tag, make_np(img_tensor), make_scalar(global_step), walltime,
                               dataformats)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images (NCHW by default) tiled into one grid, as torch tiles them."""
        self._writer.add_images(tag, make_np(img_tensor), make_scalar(global_step), walltime,
                                dataformats)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None,
                             rescale=1, dataformats="CHW", labels=None):
        """An image with boxes ``(N, 4)`` (xmin, ymin, xmax, ymax) drawn on it."""
        if rescale != 1:
            raise NotImplementedError("add_image_with_boxes(rescale=...): tensorboardX draws at "
                                      "the image's own size; resize the image and boxes first")
        self._writer.add_image_with_boxes(tag, make_np(img_tensor), make_np(box_tensor),
                                          make_scalar(global_step), walltime,
                                          dataformats=dataformats, labels=labels)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them) rendered as an image."""
        try:
            import matplotlib  # noqa: F401
        except ImportError as e:
            raise ImportError("add_figure renders with matplotlib: pip install matplotlib") from e
        self._writer.add_figure(tag, figure, make_scalar(global_step), close, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        self._writer.add_video(tag, make_np(vid_tensor), make_scalar(global_step), fps, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._writer.add_audio(tag, make_np(snd_tensor), make_scalar(global_step), sample_rate,
                               walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._writer.add_text(tag, text_string, make_scalar(global_step), walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """Hyperparameters and their metrics, in a sub-run ``run_name`` (default: the time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        if hparam_domain_discrete:
            raise NotImplementedError("add_hparams: hparam_domain_discrete is not written by "
                                      "tensorboardX; leave it out")
        self._writer.add_hparams({k: make_scalar(v) for k, v in hparam_dict.items()},
                                 {k: make_scalar(v) for k, v in metric_dict.items()},
                                 name=run_name, global_step=make_scalar(global_step))

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """Vectors (N, D) for the projector, with per-row ``metadata`` and thumbnails
        ``label_img`` (N, C, H, W)."""
        self._writer.add_embedding(make_np(mat), metadata=metadata,
                                   label_img=None if label_img is None else make_np(label_img),
                                   global_step=make_scalar(global_step), tag=tag,
                                   metadata_header=metadata_header)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        self._writer.add_pr_curve(tag, make_np(labels), make_np(predictions),
                                  make_scalar(global_step), num_thresholds,
                                  None if weights is None else make_np(weights), walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        self._writer.add_pr_curve_raw(tag, make_np(true_positive_counts),
                                      make_np(false_positive_counts),
                                      make_np(true_negative_counts),
                                      make_np(false_negative_counts), make_np(precision),
                                      make_np(recall), make_scalar(global_step), num_thresholds,
                                      weights, walltime)

    def add_custom_scalars(self, layout):
        self._writer.add_custom_scalars(layout)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        self._writer.add_custom_scalars_multilinechart(tags, category, title)

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        self._writer.add_custom_scalars_marginchart(tags, category, title)

    def add_onnx_graph(self, prototxt):
        """The graph of an ONNX model file (``ember.onnx.export`` writes one), drawn by
        TensorBoard's graph tab; needs the ``onnx`` package."""
        self._writer.add_onnx_graph(prototxt)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None,
                 global_step=None, walltime=None):
        self._writer.add_mesh(tag, make_np(vertices),
                              None if colors is None else make_np(colors),
                              None if faces is None else make_np(faces), config_dict,
                              make_scalar(global_step), walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The graph of ``model`` run on ``input_to_model``, traced by ``make_fx``: one node
        per Ember op with its output shapes, named by module scope."""
        from tensorboardX.proto import (attr_value_pb2, event_pb2, graph_pb2, node_def_pb2,
                                        tensor_shape_pb2, versions_pb2)
        from ._graph import graph_def
        graph = graph_def(model, input_to_model, (graph_pb2, node_def_pb2, attr_value_pb2,
                                                  tensor_shape_pb2, versions_pb2))
        if verbose:
            print(graph)
        self._get_file_writer().add_event(event_pb2.Event(graph_def=graph.SerializeToString()))

    def flush(self):
        self._writer.flush()
        for writer in self._scalar_writers.values():
            writer.flush()

    def close(self):
        self._writer.close()
        for writer in self._scalar_writers.values():
            writer.close()
        self._scalar_writers.clear()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
