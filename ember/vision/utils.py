"""Image utilities, as ``torchvision.utils``: ``make_grid`` and ``save_image`` for batches
of image tensors, and drawing boxes, masks and key points onto uint8/float images.

``make_grid`` is whole-array: the batch is padded into equal cells and one reshape lays the
cells out as the grid. Drawing goes through Pillow's ``ImageDraw`` as torchvision's does, so
the drawn pixels are Pillow's."""
import math
import warnings

import numpy as np

import ember


def _pil_modules():
    try:
        from PIL import Image, ImageColor, ImageDraw, ImageFont
    except ImportError as e:
        raise ImportError("ember.vision.utils draws and saves images with Pillow: pip install "
                          "'ember[vision]'") from e
    return Image, ImageColor, ImageDraw, ImageFont


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0):
    """Lay a batch ``(B, C, H, W)`` (or a list of ``(C, H, W)``) out as one ``(C, H', W')``
    image, ``nrow`` images per row, ``padding`` pixels of ``pad_value`` around each.
    ``normalize`` rescales to ``[0, 1]`` by ``value_range`` (or the min and max, per image
    with ``scale_each``)."""
    if not isinstance(tensor, ember.Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, ember.Tensor):
                    raise TypeError(f"tensor or list of tensors expected, got a list containing "
                                    f"{type(t)}")
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = ember.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.shape[0] == 1:
            tensor = ember.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.shape[1] == 1:
        tensor = ember.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max "
                            "are numbers")
        if value_range is not None:
            low, high = float(value_range[0]), float(value_range[1])
            tensor = (tensor.clamp(min=low, max=high) - low) / max(high - low, 1e-5)
        elif scale_each is True:
            low = tensor.amin(dim=(1, 2, 3), keepdim=True)
            high = tensor.amax(dim=(1, 2, 3), keepdim=True)
            tensor = (tensor - low) / (high - low).clamp(min=1e-5)
        else:
            low, high = float(tensor.min()), float(tensor.max())
            tensor = (tensor - low) / max(high - low, 1e-5)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    nmaps, c, h, w = tensor.shape
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    cell_h, cell_w = h + padding, w + padding
    # Each cell is the image with `padding` rows/columns of pad_value before it; the grid's
    # last row and column of padding are added after the layout.
    cells = ember.full((ymaps * xmaps, c, cell_h, cell_w), pad_value, dtype=tensor.dtype,
                       device=tensor.device)
    cells[:nmaps, :, padding:, padding:] = tensor
    grid = cells.reshape(ymaps, xmaps, c, cell_h, cell_w).permute(2, 0, 3, 1, 4)
    grid = grid.reshape(c, ymaps * cell_h, xmaps * cell_w)
    out = ember.full((c, ymaps * cell_h + padding, xmaps * cell_w + padding), pad_value,
                     dtype=tensor.dtype, device=tensor.device)
    out[:, :ymaps * cell_h, :xmaps * cell_w] = grid
    return out


def save_image(tensor, fp, format=None, **kwargs):
    """``make_grid`` then save as an image file (float values in ``[0, 1]``)."""
    Image = _pil_modules()[0]
    grid = make_grid(tensor, **kwargs)
    ndarr = (grid.detach() * 255 + 0.5).clamp(0, 255).permute(1, 2, 0).to(
        "cpu", ember.uint8).numpy()
    Image.fromarray(ndarr).save(fp, format=format)


def _generate_color_palette(num_objects):
    palette = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1])
    return [tuple(int(v) for v in (i * palette) % 255) for i in range(num_objects)]


def _parse_colors(colors, *, num_objects, dtype=None):
    ImageColor = _pil_modules()[1]
    if colors is None:
        colors = _generate_color_palette(num_objects)
    elif isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError(f"Number of colors must be equal or larger than the number of "
                             f"objects, but got {len(colors)} < {num_objects}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got "
                         f"{colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got "
                         f"{colors}.")
    else:
        colors = [colors] * num_objects
    colors = [ImageColor.getrgb(c) if isinstance(c, str) else c for c in colors]
    if dtype is not None and dtype.is_floating_point:
        colors = [tuple(v / 255 for v in color) for color in colors]
    return colors


def _check_image(image, channels=(1, 3), rgb_message=None):
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    if not (image.dtype == ember.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] not in channels:
        raise ValueError(rgb_message or "Only grayscale and RGB images are supported")


def _to_uint8(image):
    from .transforms.v2.functional import to_dtype
    return to_dtype(image, ember.uint8, scale=True) if image.is_floating_point() else image


def _from_uint8(out, original_dtype):
    from .transforms.v2.functional import to_dtype
    return to_dtype(out, original_dtype, scale=True) if original_dtype.is_floating_point else out


def _pil_to_chw(img):
    return ember.from_numpy(np.ascontiguousarray(np.asarray(img).transpose(2, 0, 1)))


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None,
                        font_size=None, label_colors=None, label_background_colors=None,
                        fill_labels=False):
    """Draw ``(xmin, ymin, xmax, ymax)`` boxes (and their ``labels``) on a ``(C, H, W)``
    uint8 or float image; returns a new image of the same dtype (3 channels)."""
    Image, _, ImageDraw, ImageFont = _pil_modules()
    _check_image(image)
    if boxes.shape[-1] != 4:
        raise NotImplementedError("draw_bounding_boxes draws (xmin, ymin, xmax, ymax) boxes; "
                                  "torchvision's oriented 8-coordinate boxes are not supported")
    if ((boxes[:, 0] > boxes[:, 2]).any() or (boxes[:, 1] > boxes[:, 3]).any()):
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use "
                         "torchvision.ops.box_convert to convert them")
    num_boxes = boxes.shape[0]
    if num_boxes == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn")
        return image
    if labels is None:
        labels = [None] * num_boxes
    elif len(labels) != num_boxes:
        raise ValueError(f"Number of boxes ({num_boxes}) and labels ({len(labels)}) mismatch. "
                         f"Please specify labels for each box.")
    colors = _parse_colors(colors, num_objects=num_boxes)
    if label_colors or fill_labels:
        label_colors = _parse_colors(label_colors if label_colors else "black",
                                     num_objects=num_boxes)
    else:
        label_colors = colors.copy()
    if fill_labels and label_background_colors:
        label_background_colors = _parse_colors(label_background_colors, num_objects=num_boxes)
    else:
        label_background_colors = colors.copy()
    if font is None:
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.")
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)
    if image.shape[0] == 1:
        image = image.expand(3, *image.shape[1:])
    original_dtype = image.dtype
    img_to_draw = Image.fromarray(np.ascontiguousarray(
        _to_uint8(image).permute(1, 2, 0).cpu().numpy()))
    draw = ImageDraw.Draw(img_to_draw, "RGBA" if fill else None)
    for bbox, color, label, label_color, label_bg in zip(boxes.to(ember.int64).tolist(), colors,
                                                          labels, label_colors,
                                                          label_background_colors):
        draw.rectangle(bbox, width=width, outline=color,
                       fill=tuple(color) + (100,) if fill else None)
        if label is not None:
            box_margin = 1
            margin = width + box_margin
            if fill_labels:
                left, top, right, bottom = draw.textbbox((bbox[0] + margin, bbox[1] + margin),
                                                         label, font=txt_font)
                draw.rectangle((left - box_margin, top - box_margin, right + box_margin,
                                bottom + box_margin), fill=label_bg)
            draw.text((bbox[0] + margin, bbox[1] + margin), label, fill=label_color,
                      font=txt_font)
    return _from_uint8(_pil_to_chw(img_to_draw).to(image.device), original_dtype)


def draw_segmentation_masks(image, masks, alpha=0.8, colors=None):
    """Blend boolean ``masks`` (``(N, H, W)`` or ``(H, W)``) over an RGB image with
    opacity ``alpha``; pixels covered by more than one mask are blended with black."""
    _check_image(image, channels=(3,), rgb_message="Pass an RGB image. Other Image formats "
                                                   "are not supported")
    if masks.ndim == 2:
        masks = masks[None, :, :]
    if masks.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != ember.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if masks.shape[-2:] != image.shape[-2:]:
        raise ValueError("The image and the masks must have the same height and width")
    num_masks = masks.shape[0]
    if num_masks == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn")
        return image
    original_dtype = image.dtype
    palette = ember.tensor(_parse_colors(colors, num_objects=num_masks, dtype=original_dtype),
                           dtype=original_dtype, device=image.device)          # (N, 3)
    # The last mask covering a pixel gives its colour (masks are painted in order).
    covered = masks.any(dim=0)
    order = ember.arange(1, num_masks + 1, device=image.device)[:, None, None]
    last = (masks.long() * order).amax(dim=0).clamp(min=1) - 1
    painted = palette[last].permute(2, 0, 1)                                     # (3, H, W)
    img_to_draw = ember.where(covered[None], painted, image)
    overlapping = masks.sum(dim=0) > 1
    img_to_draw = ember.where(overlapping[None], ember.zeros_like(img_to_draw), img_to_draw)
    out = image * (1 - alpha) + img_to_draw * alpha
    return out.to(original_dtype)


def draw_keypoints(image, keypoints, connectivity=None, colors=None, radius=2, width=3,
                   visibility=None):
    """Draw ``(num_instances, K, 2)`` key points (filled circles) and the ``connectivity``
    lines between visible ones on an RGB image."""
    _, _, ImageDraw, _ = _pil_modules()
    from PIL import Image
    _check_image(image, channels=(3,), rgb_message="Pass an RGB image. Other Image formats "
                                                   "are not supported")
    if keypoints.ndim != 3:
        raise ValueError("keypoints must be of shape (num_instances, K, 2)")
    if visibility is None:
        visibility = ember.ones(keypoints.shape[:-1], dtype=ember.bool)
    if visibility.ndim == 3:
        visibility = visibility.squeeze(-1)
    if visibility.ndim != 2:
        raise ValueError(f"visibility must be of shape (num_instances, K). Got "
                         f"ndim={visibility.ndim}")
    if tuple(visibility.shape) != tuple(keypoints.shape[:-1]):
        raise ValueError(f"keypoints and visibility must have the same dimensionality for "
                         f"num_instances and K. Got visibility.shape={tuple(visibility.shape)} "
                         f"and keypoints.shape={tuple(keypoints.shape)}")
    original_dtype = image.dtype
    img_to_draw = Image.fromarray(np.ascontiguousarray(
        _to_uint8(image).permute(1, 2, 0).cpu().numpy()))
    draw = ImageDraw.Draw(img_to_draw)
    for kpt_inst, vis_inst in zip(keypoints.to(ember.int64).tolist(),
                                  visibility.cpu().bool().tolist()):
        for (x, y), kp_vis in zip(kpt_inst, vis_inst):
            if kp_vis:
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=colors,
                             outline=None, width=0)
        for a, b in connectivity or ():
            if vis_inst[a] and vis_inst[b]:
                draw.line(((kpt_inst[a][0], kpt_inst[a][1]), (kpt_inst[b][0], kpt_inst[b][1])),
                          width=width)
    return _from_uint8(_pil_to_chw(img_to_draw).to(image.device), original_dtype)
