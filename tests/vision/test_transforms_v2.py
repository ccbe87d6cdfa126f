"""ember.vision.transforms.v2 against torchvision.transforms.v2: the v2 functional names and
kernels, the transform classes on tensors and PIL images (given the same parameters for the
random ones: Ember's RNG is not PyTorch's), sample structures (tuples, dicts, pass-through of
labels and second tensors), and reproducibility under ``ember.manual_seed``."""
import numpy as np
import pytest
import torch

import ember
from tests.vision.torchvision_oracle import import_torchvision

tv = import_torchvision()
PIL = pytest.importorskip("PIL.Image")
TV2 = pytest.importorskip("torchvision.transforms.v2")
TF2 = TV2.functional
import ember.vision.transforms.v2 as E2  # noqa: E402
EF2 = E2.functional

RNG = np.random.default_rng(1)
IMG = RNG.integers(0, 256, (3, 11, 14), dtype=np.uint8)


def _pil(arr):
    return PIL.fromarray(np.ascontiguousarray(arr.transpose(1, 2, 0)))


def _np(x):
    if isinstance(x, PIL.Image):
        return np.asarray(x)
    return x.detach().numpy() if isinstance(x, ember.Tensor) else x.numpy()


def _close(got, want, tol=0, ftol=1e-5):
    g, w = _np(got), _np(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    if w.dtype.kind in "ui":
        assert np.abs(g.astype(np.int64) - w.astype(np.int64)).max(initial=0) <= tol
    else:
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=ftol)


CASES = [
    ("horizontal_flip", lambda F: (F.horizontal_flip, (), {}), 0),
    ("vertical_flip", lambda F: (F.vertical_flip, (), {}), 0),
    ("resize", lambda F: (F.resize, ([7, 9],), {}), 1),
    ("resize_max_size_only", lambda F: (F.resize, (None,), {"max_size": 9}), 1),
    ("center_crop", lambda F: (F.center_crop, ([6, 7],), {}), 0),
    ("pad", lambda F: (F.pad, ([1, 2, 3, 0],), {"fill": 4}), 0),
    ("rotate", lambda F: (F.rotate, (25.0,), {}), 1),
    ("affine", lambda F: (F.affine, (10.0, [1, 2], 1.1, [3.0, 1.0]), {}), 1),
    ("adjust_hue", lambda F: (F.adjust_hue, (0.1,), {}), 1),
    ("rgb_to_grayscale", lambda F: (F.rgb_to_grayscale, (), {}), 1),
    ("gaussian_blur", lambda F: (F.gaussian_blur, ([3, 5],), {"sigma": [0.9, 1.3]}), 1),
    ("equalize", lambda F: (F.equalize, (), {}), 0),
    ("posterize", lambda F: (F.posterize, (2,), {}), 0),
]


@pytest.mark.parametrize("name,case,tol", CASES, ids=[c[0] for c in CASES])
def test_v2_functional_tensor_and_pil(name, case, tol):
    (ef, args, kw), (tf, _, _) = case(EF2), case(TF2)
    _close(ef(ember.tensor(IMG), *args, **kw), tf(torch.tensor(IMG), *args, **kw), tol)
    _close(ef(_pil(IMG), *args, **kw), tf(_pil(IMG), *args, **kw))


@pytest.mark.parametrize("dtype,scale", [("float32", True), ("float64", False), ("int16", True),
                                         ("int32", True), ("uint8", True)])
def test_to_dtype_matches_torchvision(dtype, scale):
    for arr in (IMG, (IMG.astype(np.float32) / 255), IMG.astype(np.int16) * 100):
        if arr.dtype == np.float32 and dtype in ("int32",):
            with pytest.raises(RuntimeError, match="cannot be performed safely"):
                EF2.to_dtype(ember.tensor(arr), getattr(ember, dtype), scale=True)
            continue
        got = E2.ToDtype(getattr(ember, dtype), scale=scale)(ember.tensor(arr))
        want = TV2.ToDtype(getattr(torch, dtype), scale=scale)(torch.tensor(arr))
        _close(got, want.as_subclass(torch.Tensor))


def test_to_image_and_pipeline_match_torchvision():
    got = E2.ToImage()(_pil(IMG))
    want = TV2.ToImage()(_pil(IMG))
    _close(got, want.as_subclass(torch.Tensor))
    _close(E2.ToImage()(IMG.transpose(1, 2, 0)), TV2.ToImage()(IMG.transpose(1, 2, 0))
           .as_subclass(torch.Tensor))
    pipe = lambda T, d: T.Compose([T.ToImage(), T.Resize(8), T.CenterCrop(7),  # noqa: E731
                                   T.ToDtype(d, scale=True), T.Normalize([0.5] * 3, [0.25] * 3)])
    _close(pipe(E2, ember.float32)(_pil(IMG)),
           pipe(TV2, torch.float32)(_pil(IMG)).as_subclass(torch.Tensor), ftol=2e-2)


def test_structures_pass_labels_and_second_tensors_through():
    x, mask = ember.tensor(IMG), ember.tensor(IMG[:1])
    out = E2.RandomHorizontalFlip(p=1.0)({"image": x, "mask": mask, "label": 3,
                                          "name": "a"})
    assert set(out) == {"image", "mask", "label", "name"} and out["label"] == 3
    assert ember.equal(out["image"], x.flip(-1)) and out["mask"] is mask
    img, lbl = E2.RandomVerticalFlip(p=1.0)(_pil(IMG), ember.tensor(5))
    np.testing.assert_array_equal(np.asarray(img), np.asarray(_pil(IMG))[::-1])
    assert lbl.item() == 5
    a, b = E2.RandomRotation(40)([_pil(IMG), _pil(IMG)])  # one draw for both images
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_random_classes_with_torchvision_params():
    e, t = ember.tensor(IMG), torch.tensor(IMG)
    ours = E2.RandomResizedCrop(6)
    theirs = TV2.RandomResizedCrop(6)
    torch.manual_seed(0)
    params = theirs.make_params([t])
    _close(ours.transform(e, params), theirs.transform(t, params), 1)
    ours, theirs = E2.RandomAffine(10, (0.1, 0.2), (0.9, 1.1), 4), TV2.RandomAffine(
        10, (0.1, 0.2), (0.9, 1.1), 4)
    torch.manual_seed(1)
    params = theirs.make_params([t])
    _close(ours.transform(e, dict(params)), theirs.transform(t, params), 1)
    ours, theirs = E2.ColorJitter(0.3, 0.3, 0.3, 0.1), TV2.ColorJitter(0.3, 0.3, 0.3, 0.1)
    torch.manual_seed(2)
    params = theirs.make_params([t])
    _close(ours.transform(e, dict(params, fn_idx=params["fn_idx"].tolist())),
           theirs.transform(t, params), 2)
    ours, theirs = E2.RandomCrop(9, padding=2), TV2.RandomCrop(9, padding=2)
    torch.manual_seed(3)
    params = theirs.make_params([t])
    _close(ours.transform(e, dict(params)), theirs.transform(t, params))


@pytest.mark.parametrize("make", [
    lambda T: T.RandomCrop(10, pad_if_needed=True, padding=1),
    lambda T: T.RandomResizedCrop(7),
    lambda T: T.RandomPerspective(p=1.0),
    lambda T: T.RandomErasing(p=1.0),
    lambda T: T.RandomChoice([T.RandomInvert(1.0), T.RandomEqualize(1.0)]),
    lambda T: T.RandomOrder([T.RandomPosterize(3, p=1.0), T.RandomSolarize(100, p=1.0)]),
    lambda T: T.RandomApply([T.GaussianBlur(3)], p=0.5),
    lambda T: T.RandomChannelPermutation(),
    lambda T: T.ElasticTransform(30.0, 1.0),
    lambda T: T.TrivialAugmentWide(),
    lambda T: T.RandAugment(),
])
def test_v2_random_reproducible_and_shaped_as_torchvision(make):
    e, t = ember.tensor(IMG), torch.tensor(IMG)
    runs = []
    for _ in range(2):
        ember.manual_seed(7)
        runs.append([make(E2)(e) for _ in range(3)])
    for a, b in zip(*runs):
        assert ember.equal(a, b)
    torch.manual_seed(7)
    want = make(TV2)(t)
    assert tuple(runs[0][0].shape) == tuple(want.shape) and runs[0][0].dtype == ember.uint8
