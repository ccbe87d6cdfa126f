"""ember.vision.utils against torchvision.utils (pure Python, runs on CPU torch): make_grid,
save_image and the drawing functions on the same inputs. ember.vision.io against Pillow
(torchvision's compiled image codecs do not load here) and torchvision's documented
semantics: ``(C, H, W)`` uint8, read modes, round trips."""
import numpy as np
import pytest
import torch

import ember
from tests.vision.torchvision_oracle import import_torchvision

tv = import_torchvision()
PIL = pytest.importorskip("PIL.Image")
import ember.vision.io as EIO  # noqa: E402
import ember.vision.utils as EU  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("kw", [{}, {"nrow": 3, "padding": 1, "pad_value": 0.5},
                                {"normalize": True}, {"normalize": True, "scale_each": True},
                                {"normalize": True, "value_range": (0.2, 0.7)}])
@pytest.mark.parametrize("shape", [(5, 3, 4, 6), (4, 1, 3, 3), (1, 3, 4, 4), (3, 5, 5)])
def test_make_grid_matches_torchvision(shape, kw):
    x = RNG.uniform(-0.5, 1.5, shape).astype(np.float32)
    got = EU.make_grid(ember.tensor(x), **kw)
    want = tv.utils.make_grid(torch.tensor(x), **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    lst = EU.make_grid([ember.tensor(x[0])] * 2) if len(shape) == 4 else None
    if lst is not None:
        np.testing.assert_array_equal(lst.numpy(), tv.utils.make_grid(
            [torch.tensor(x[0])] * 2).numpy())


def test_save_image_matches_torchvision(tmp_path):
    x = RNG.uniform(0, 1, (3, 3, 5, 4)).astype(np.float32)
    EU.save_image(ember.tensor(x), tmp_path / "a.png", nrow=2)
    tv.utils.save_image(torch.tensor(x), tmp_path / "b.png", nrow=2)
    np.testing.assert_array_equal(np.asarray(PIL.open(tmp_path / "a.png")),
                                  np.asarray(PIL.open(tmp_path / "b.png")))


def test_draw_bounding_boxes_matches_torchvision():
    img = RNG.integers(0, 256, (3, 40, 50), dtype=np.uint8)
    boxes = np.array([[2, 3, 20, 30], [10, 5, 45, 38]], dtype=np.float32)
    for kw in ({}, {"labels": ["a", "bc"], "colors": ["red", (0, 255, 0)], "width": 2},
               {"fill": True, "labels": ["x", "y"], "fill_labels": True}):
        got = EU.draw_bounding_boxes(ember.tensor(img), ember.tensor(boxes), **kw)
        want = tv.utils.draw_bounding_boxes(torch.tensor(img), torch.tensor(boxes), **kw)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    fimg = img[:1].astype(np.float32) / 255
    got = EU.draw_bounding_boxes(ember.tensor(fimg), ember.tensor(boxes))
    want = tv.utils.draw_bounding_boxes(torch.tensor(fimg), torch.tensor(boxes))
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        EU.draw_bounding_boxes(ember.tensor(img), ember.tensor(boxes[:, [2, 1, 0, 3]]))


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_draw_segmentation_masks_and_keypoints_match_torchvision(dtype):
    img = RNG.integers(0, 256, (3, 12, 15), dtype=np.uint8)
    if dtype == "float32":
        img = img.astype(np.float32) / 255
    masks = RNG.uniform(size=(3, 12, 15)) > 0.6
    for kw in ({}, {"alpha": 0.3, "colors": ["blue", (10, 20, 30), "yellow"]}):
        got = EU.draw_segmentation_masks(ember.tensor(img), ember.tensor(masks), **kw)
        want = tv.utils.draw_segmentation_masks(torch.tensor(img), torch.tensor(masks), **kw)
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)
    kp = np.array([[[2, 3], [10, 8], [5, 11]], [[12, 1], [3, 3], [7, 7]]], dtype=np.float32)
    vis = np.array([[True, True, False], [True, True, True]])
    kw = dict(connectivity=[(0, 1), (1, 2)], colors="red", radius=1, width=1)
    got = EU.draw_keypoints(ember.tensor(img), ember.tensor(kp), visibility=ember.tensor(vis),
                            **kw)
    want = tv.utils.draw_keypoints(torch.tensor(img), torch.tensor(kp),
                                   visibility=torch.tensor(vis), **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)


@pytest.mark.parametrize("pil_mode", ["L", "LA", "RGB", "RGBA"])
def test_png_round_trip_and_read_modes(tmp_path, pil_mode):
    arr = RNG.integers(0, 256, (9, 7, len(pil_mode)), dtype=np.uint8)
    pil = PIL.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)
    path = tmp_path / "x.png"
    pil.save(path)
    img = EIO.read_image(str(path))
    assert img.dtype == ember.uint8 and tuple(img.shape) == (len(pil_mode), 9, 7)
    np.testing.assert_array_equal(img.numpy(), arr.transpose(2, 0, 1))
    for mode, pm in ((EIO.ImageReadMode.GRAY, "L"), (EIO.ImageReadMode.RGB, "RGB"),
                     (EIO.ImageReadMode.RGB_ALPHA, "RGBA"), (EIO.ImageReadMode.GRAY_ALPHA, "LA")):
        want = np.asarray(pil.convert(pm)).reshape(9, 7, -1).transpose(2, 0, 1)
        np.testing.assert_array_equal(EIO.decode_png(EIO.read_file(path), mode).numpy(), want)
    data = EIO.encode_png(img, compression_level=9)
    assert data.dtype == ember.uint8 and data.ndim == 1
    np.testing.assert_array_equal(EIO.decode_image(data).numpy(), img.numpy())
    EIO.write_png(img, tmp_path / "y.png")
    np.testing.assert_array_equal(np.asarray(PIL.open(tmp_path / "y.png")), np.asarray(pil))


def test_jpeg_encode_decode_and_errors(tmp_path):
    yy, xx = np.mgrid[0:16, 0:16]
    arr = np.stack([yy * 12, xx * 10, (yy + xx) * 6], -1).astype(np.uint8)  # smooth: JPEG-friendly
    img = ember.tensor(arr.transpose(2, 0, 1).copy())
    data = EIO.encode_jpeg(img, quality=95)
    dec = EIO.decode_jpeg(data)
    assert tuple(dec.shape) == (3, 16, 16) and dec.dtype == ember.uint8
    assert np.abs(dec.numpy().astype(int) - arr.transpose(2, 0, 1)).mean() < 3
    EIO.write_jpeg(img, tmp_path / "z.jpg")
    np.testing.assert_array_equal(EIO.read_image(tmp_path / "z.jpg").numpy(),
                                  np.asarray(PIL.open(tmp_path / "z.jpg")).transpose(2, 0, 1))
    assert EIO.decode_jpeg(data, EIO.ImageReadMode.GRAY).shape == (1, 16, 16)
    with pytest.raises(RuntimeError, match="Expected a PNG"):
        EIO.decode_png(data)
    with pytest.raises(ValueError, match="between 1 and 100"):
        EIO.encode_jpeg(img, quality=0)
    with pytest.raises(RuntimeError, match="1-D uint8"):
        EIO.decode_image(img)
