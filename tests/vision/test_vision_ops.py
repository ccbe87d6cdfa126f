"""ember.vision.ops against torchvision: box ops against torchvision's pure-Python
``box_iou``/``box_convert`` & co (they run on CPU torch); nms, roi_align and roi_pool against
brute-force NumPy transcriptions of torchvision's kernels (its compiled ops do not load beside
this torch build); FPN against torchvision's module with the same weights."""
import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.vision.ops as eops
from tests.vision.torchvision_oracle import import_torchvision

tv = import_torchvision()
tvops = pytest.importorskip("torchvision.ops.boxes")


def _boxes(rng, n, size=20.0):
    xy = rng.uniform(0, size, (n, 2))
    wh = rng.uniform(1, size / 2, (n, 2))
    return np.concatenate([xy, xy + wh], 1)


@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou", "distance_box_iou",
                                  "complete_box_iou"])
def test_pairwise_ious_match_torchvision(name):
    rng = np.random.default_rng(0)
    a, b = _boxes(rng, 5), _boxes(rng, 7)
    got = getattr(eops, name)(ember.tensor(a), ember.tensor(b))
    want = getattr(tvops, name)(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_box_area_upcasts_integers_and_iou_differentiates():
    b = np.array([[0, 0, 200, 250], [10, 10, 20, 30]], dtype=np.int16)
    got = eops.box_area(ember.tensor(b))
    want = tvops.box_area(torch.tensor(b))
    assert got.tolist() == want.tolist() and str(got.dtype)[6:] == str(want.dtype)[6:]
    x = ember.tensor(_boxes(np.random.default_rng(1), 3), requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: eops.generalized_box_iou(t, t.flip(0)), (x,))


@pytest.mark.parametrize("fmts", [("xyxy", "xywh"), ("xyxy", "cxcywh"), ("xywh", "cxcywh"),
                                  ("cxcywh", "xyxy"), ("xywh", "xyxy"), ("xyxy", "xyxy")])
def test_box_convert(fmts):
    b = _boxes(np.random.default_rng(2), 4)
    got = eops.box_convert(ember.tensor(b), *fmts)
    want = tvops.box_convert(torch.tensor(b), *fmts)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    with pytest.raises(ValueError):
        eops.box_convert(ember.tensor(b), "xyxy", "yxyx")


def test_clip_remove_small_masks_to_boxes():
    b = _boxes(np.random.default_rng(3), 6, size=30.0) - 5
    np.testing.assert_allclose(eops.clip_boxes_to_image(ember.tensor(b), (12, 17)).numpy(),
                               tvops.clip_boxes_to_image(torch.tensor(b), (12, 17)).numpy())
    assert (eops.remove_small_boxes(ember.tensor(b), 6.0).tolist()
            == tvops.remove_small_boxes(torch.tensor(b), 6.0).tolist())
    masks = np.zeros((2, 6, 8), dtype=np.uint8)
    masks[0, 1:4, 2:7] = 1
    masks[1, 5, 0] = 1
    assert (eops.masks_to_boxes(ember.tensor(masks)).tolist()
            == tv.ops.masks_to_boxes(torch.tensor(masks)).tolist())


def _nms_reference(boxes, scores, thr):
    # torchvision's CPU kernel: sort by score, keep a box unless a kept box overlaps it > thr.
    order = np.argsort(-scores, kind="stable")
    keep = []
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    for i in order:
        ok = True
        for j in keep:
            w = max(0.0, min(boxes[i, 2], boxes[j, 2]) - max(boxes[i, 0], boxes[j, 0]))
            h = max(0.0, min(boxes[i, 3], boxes[j, 3]) - max(boxes[i, 1], boxes[j, 1]))
            if w * h / (area[i] + area[j] - w * h) > thr:
                ok = False
                break
        if ok:
            keep.append(i)
    return keep


@pytest.mark.parametrize("thr", [0.1, 0.5])
def test_nms_and_batched_nms(thr):
    rng = np.random.default_rng(4)
    b = _boxes(rng, 40).astype(np.float32)
    s = rng.uniform(size=40).astype(np.float32)
    assert eops.nms(ember.tensor(b), ember.tensor(s), thr).tolist() == _nms_reference(b, s, thr)
    assert eops.nms(ember.tensor(b), ember.tensor(s), thr).dtype == ember.int64
    idx = rng.integers(0, 3, 40)
    want = []
    for c in range(3):
        sel = np.flatnonzero(idx == c)
        want += [sel[k] for k in _nms_reference(b[sel], s[sel], thr)]
    want = sorted(want, key=lambda k: -s[k])
    got = eops.batched_nms(ember.tensor(b), ember.tensor(s), ember.tensor(idx), thr)
    assert got.tolist() == want
    assert eops.nms(ember.zeros((0, 4)), ember.zeros((0,)), 0.5).shape == (0,)


def _bilinear(img, y, x):
    c, h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(c)
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yh = yl = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xh = xl = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    return ((1 - ly) * (1 - lx) * img[:, yl, xl] + (1 - ly) * lx * img[:, yl, xh]
            + ly * (1 - lx) * img[:, yh, xl] + ly * lx * img[:, yh, xh])


def _roi_align_reference(inp, rois, out, scale, ratio, aligned):
    ph, pw = out
    res = np.zeros((len(rois), inp.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for n, r in enumerate(rois):
        x1, y1, x2, y2 = (v * scale - off for v in r[1:])
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for i in range(ph):
            for j in range(pw):
                acc = 0
                for iy in range(gh):
                    y = y1 + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        x = x1 + j * bw + (ix + 0.5) * bw / gw
                        acc = acc + _bilinear(inp[int(r[0])], y, x)
                res[n, :, i, j] = acc / count
    return res


def _rois(rng, k, n, size):
    b = _boxes(rng, k, size)
    b[0] = [-3.0, 2.0, size + 4, 6.5]  # reaches outside the map
    return np.concatenate([rng.integers(0, n, (k, 1)), b], 1)


@pytest.mark.parametrize("ratio,aligned,scale", [(-1, False, 1.0), (2, True, 0.5),
                                                  (-1, True, 0.5)])
def test_roi_align_matches_kernel_definition(ratio, aligned, scale):
    rng = np.random.default_rng(5)
    inp = rng.standard_normal((2, 3, 9, 11))
    rois = _rois(rng, 6, 2, 16.0)
    got = eops.roi_align(ember.tensor(inp), ember.tensor(rois), (3, 2), scale, ratio, aligned)
    want = _roi_align_reference(inp, rois, (3, 2), scale, ratio, aligned)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    as_list = [ember.tensor(rois[rois[:, 0] == i, 1:]) for i in range(2)]
    order = np.argsort(rois[:, 0], kind="stable")
    np.testing.assert_allclose(
        eops.RoIAlign((3, 2), scale, ratio, aligned)(ember.tensor(inp), as_list).numpy(),
        want[order], rtol=1e-10, atol=1e-12)


def test_roi_align_gradcheck():
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((1, 2, 5, 6)), requires_grad=True)
    rois = ember.tensor(_rois(rng, 3, 1, 7.0))
    assert ember.autograd.gradcheck(lambda t: eops.roi_align(t, rois, 2, 1.0, -1, True), (x,))


def _roi_pool_reference(inp, rois, out, scale):
    ph, pw = out
    _, c, h, w = inp.shape
    res = np.zeros((len(rois), c, ph, pw))
    rnd = lambda v: math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)  # noqa: E731
    for n, r in enumerate(rois):
        x1, y1, x2, y2 = (rnd(v * scale) for v in r[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            for j in range(pw):
                hs = min(max(math.floor(i * rh / ph) + y1, 0), h)
                he = min(max(math.ceil((i + 1) * rh / ph) + y1, 0), h)
                ws = min(max(math.floor(j * rw / pw) + x1, 0), w)
                we = min(max(math.ceil((j + 1) * rw / pw) + x1, 0), w)
                if he > hs and we > ws:
                    res[n, :, i, j] = inp[int(r[0]), :, hs:he, ws:we].max(axis=(1, 2))
    return res


def test_roi_pool_matches_kernel_definition_and_routes_gradient_to_argmax():
    rng = np.random.default_rng(7)
    inp = rng.standard_normal((2, 3, 8, 10))
    rois = _rois(rng, 5, 2, 12.0)
    rois[1, 1:] = [30, 30, 40, 40]  # entirely outside: empty bins give 0
    x = ember.tensor(inp, requires_grad=True)
    got = eops.RoIPool((2, 3), 0.75)(x, ember.tensor(rois))
    np.testing.assert_allclose(got.detach().numpy(), _roi_pool_reference(inp, rois, (2, 3), 0.75))
    got.sum().backward()
    g = x.grad.numpy()
    assert set(np.unique(g)) <= set(range(0, 31)) and g.sum() == np.count_nonzero(got.detach())


def test_sigmoid_focal_loss_matches_torchvision():
    rng = np.random.default_rng(8)
    logits, targets = rng.standard_normal((4, 5)), (rng.uniform(size=(4, 5)) > 0.5) * 1.0
    fl = pytest.importorskip("torchvision.ops.focal_loss")
    for red in ("none", "mean", "sum"):
        for alpha in (0.25, -1):
            got = eops.sigmoid_focal_loss(ember.tensor(logits), ember.tensor(targets), alpha,
                                          2, red)
            want = fl.sigmoid_focal_loss(torch.tensor(logits), torch.tensor(targets), alpha,
                                         2, red)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="Invalid Value"):
        eops.sigmoid_focal_loss(ember.tensor(logits), ember.tensor(targets), reduction="avg")


@pytest.mark.parametrize("extra", [None, "pool", "p6p7"])
def test_feature_pyramid_network_matches_torchvision(extra):
    fpn_mod = pytest.importorskip("torchvision.ops.feature_pyramid_network")
    from ember.vision.ops import feature_pyramid_network as efpn
    blocks = {None: (None, None), "pool": (efpn.LastLevelMaxPool(), fpn_mod.LastLevelMaxPool()),
              "p6p7": (efpn.LastLevelP6P7(8, 4), fpn_mod.LastLevelP6P7(8, 4))}[extra]
    ours = eops.FeaturePyramidNetwork([2, 4, 8], 4, extra_blocks=blocks[0])
    theirs = fpn_mod.FeaturePyramidNetwork([2, 4, 8], 4, extra_blocks=blocks[1])
    state = {k: v.numpy() for k, v in ours.state_dict().items()}
    assert state.keys() == theirs.state_dict().keys()
    theirs.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    rng = np.random.default_rng(9)
    feats = [rng.standard_normal((1, c, s, s)).astype(np.float32)
             for c, s in ((2, 16), (4, 8), (8, 4))]
    got = ours(OrderedDict((f"f{i}", ember.tensor(f)) for i, f in enumerate(feats)))
    want = theirs(OrderedDict((f"f{i}", torch.tensor(f)) for i, f in enumerate(feats)))
    assert list(got) == list(want)
    for k in got:
        np.testing.assert_allclose(got[k].detach().numpy(), want[k].detach().numpy(),
                                   rtol=1e-4, atol=1e-5)
