"""Box arithmetic (``torchvision.ops.boxes``): areas, IoU variants, format conversion,
clipping and non-maximum suppression.

Boxes are ``(N, 4)`` tensors; everything except ``nms``'s greedy selection is elementwise or
a broadcast over all pairs, so it runs as a few whole-array ops and differentiates through
Ember's autograd. ``nms`` computes the full IoU matrix once and then walks it row by row in
score order: the greedy suppression is inherently sequential, but each step is one vectorised
row update."""
import numpy as np

import ember


def _upcast(t):
    # Protects box arithmetic from overflow: uint8/int16 boxes multiply in a wider type.
    if t.is_floating_point():
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def _check_boxes(boxes, name="boxes"):
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise ValueError(f"{name} should be a tensor of shape (N, 4), got {tuple(boxes.shape)}")


def box_area(boxes):
    """Area of ``(x1, y1, x2, y2)`` boxes, ``(N, 4) -> (N,)``."""
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = ember.maximum(boxes1[:, None, :2], boxes2[:, :2])
    rb = ember.minimum(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter, union


def box_iou(boxes1, boxes2):
    """Pairwise intersection-over-union, ``(N, 4), (M, 4) -> (N, M)``, boxes as
    ``(x1, y1, x2, y2)`` with ``0 <= x1 < x2`` and ``0 <= y1 < y2``."""
    inter, union = _box_inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    """Pairwise generalized IoU (Rezatofighi et al., 2019): IoU minus the share of the
    smallest enclosing box that the union does not cover."""
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = ember.minimum(boxes1[:, None, :2], boxes2[:, :2])
    rbi = ember.maximum(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[:, :, 0] * whi[:, :, 1]
    return iou - (areai - union) / areai


def _box_diou_iou(boxes1, boxes2, eps):
    iou = box_iou(boxes1, boxes2)
    lti = ember.minimum(boxes1[:, None, :2], boxes2[:, :2])
    rbi = ember.maximum(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    diagonal_distance_squared = whi[:, :, 0] ** 2 + whi[:, :, 1] ** 2 + eps
    x_p = (boxes1[:, 0] + boxes1[:, 2]) / 2
    y_p = (boxes1[:, 1] + boxes1[:, 3]) / 2
    x_g = (boxes2[:, 0] + boxes2[:, 2]) / 2
    y_g = (boxes2[:, 1] + boxes2[:, 3]) / 2
    centers_distance_squared = (_upcast(x_p[:, None] - x_g[None, :]) ** 2
                                + _upcast(y_p[:, None] - y_g[None, :]) ** 2)
    return iou - centers_distance_squared / diagonal_distance_squared, iou


def distance_box_iou(boxes1, boxes2, eps=1e-7):
    """Pairwise distance IoU (Zheng et al., 2019): IoU minus the squared centre distance over
    the squared diagonal of the enclosing box."""
    return _box_diou_iou(_upcast(boxes1), _upcast(boxes2), eps)[0]


def complete_box_iou(boxes1, boxes2, eps=1e-7):
    """Pairwise complete IoU: distance IoU with an aspect-ratio consistency term."""
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    diou, iou = _box_diou_iou(boxes1, boxes2, eps)
    w_pred = boxes1[:, None, 2] - boxes1[:, None, 0]
    h_pred = boxes1[:, None, 3] - boxes1[:, None, 1]
    w_gt = boxes2[:, 2] - boxes2[:, 0]
    h_gt = boxes2[:, 3] - boxes2[:, 1]
    v = (4 / (np.pi ** 2)) * ember.pow(ember.atan(w_pred / h_pred) - ember.atan(w_gt / h_gt), 2)
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


_BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


def _to_xyxy(boxes, fmt):
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":
        return ember.stack((a, b, a + c, b + d), dim=-1)
    if fmt == "cxcywh":
        return ember.stack((a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d), dim=-1)
    return boxes


def _from_xyxy(boxes, fmt):
    x1, y1, x2, y2 = boxes.unbind(-1)
    if fmt == "xywh":
        return ember.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    if fmt == "cxcywh":
        return ember.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)
    return boxes


def box_convert(boxes, in_fmt, out_fmt):
    """Convert boxes between ``"xyxy"`` (corners), ``"xywh"`` (corner and size) and
    ``"cxcywh"`` (centre and size)."""
    if in_fmt not in _BOX_FORMATS or out_fmt not in _BOX_FORMATS:
        raise ValueError("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    if in_fmt == out_fmt:
        return boxes.clone()
    return _from_xyxy(_to_xyxy(boxes, in_fmt), out_fmt)


def clip_boxes_to_image(boxes, size):
    """Clip ``(x1, y1, x2, y2)`` boxes to an image of ``size = (height, width)``."""
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return ember.stack((x, y), dim=boxes.dim()).reshape(boxes.shape)


def remove_small_boxes(boxes, min_size):
    """Indices of the boxes whose width and height are both at least ``min_size``."""
    ws = boxes[:, 2] - boxes[:, 0]
    hs = boxes[:, 3] - boxes[:, 1]
    return ember.where((ws >= min_size) & (hs >= min_size))[0]


def masks_to_boxes(masks):
    """The ``(x1, y1, x2, y2)`` box around each of ``(N, H, W)`` masks' nonzero pixels."""
    if masks.numel() == 0:
        return ember.zeros((0, 4), device=masks.device, dtype=ember.float32)
    n, h, w = masks.shape
    nonzero = masks != 0
    ys = ember.arange(h, device=masks.device, dtype=ember.float32)[None, :, None]
    xs = ember.arange(w, device=masks.device, dtype=ember.float32)[None, None, :]
    big = float(max(h, w) + 1)
    x1 = ember.where(nonzero, xs, big).flatten(1).amin(1)
    y1 = ember.where(nonzero, ys, big).flatten(1).amin(1)
    x2 = ember.where(nonzero, xs, -1.0).flatten(1).amax(1)
    y2 = ember.where(nonzero, ys, -1.0).flatten(1).amax(1)
    return ember.stack((x1, y1, x2, y2), dim=1)


def nms(boxes, scores, iou_threshold):
    """Greedy non-maximum suppression: visit boxes by decreasing score, keep one, drop every
    remaining box whose IoU with it exceeds ``iou_threshold``. Returns the kept indices
    (int64) in decreasing score order."""
    _check_boxes(boxes)
    if scores.dim() != 1 or scores.shape[0] != boxes.shape[0]:
        raise ValueError(f"scores should be a 1-D tensor with one score per box, got "
                         f"{tuple(scores.shape)} for boxes {tuple(boxes.shape)}")
    n = boxes.shape[0]
    if n == 0:
        return ember.empty((0,), dtype=ember.int64, device=boxes.device)
    with ember.no_grad():
        order = ember.argsort(scores.detach(), descending=True, stable=True)
        ordered = boxes.detach()[order]
        if not ordered.is_floating_point():
            ordered = ordered.double()
        suppress = (box_iou(ordered, ordered) > iou_threshold).cpu().numpy()
    alive = np.ones(n, dtype=bool)
    for i in range(n):
        if alive[i]:
            alive[i + 1:] &= ~suppress[i, i + 1:]
    keep = np.flatnonzero(alive)
    return order[ember.as_tensor(keep, device=boxes.device)]


def batched_nms(boxes, scores, idxs, iou_threshold):
    """``nms`` applied per category ``idxs``: boxes of different categories never suppress
    each other. Each category's boxes are shifted by an offset larger than any coordinate, so
    one ``nms`` over all boxes does every category at once."""
    if boxes.numel() == 0:
        return ember.empty((0,), dtype=ember.int64, device=boxes.device)
    with ember.no_grad():
        max_coordinate = boxes.max()
        offsets = idxs.to(boxes.dtype) * (max_coordinate + 1)
        return nms(boxes + offsets[:, None], scores, iou_threshold)
