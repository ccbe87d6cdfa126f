"""``ember.vision.transforms.v2``, as ``torchvision.transforms.v2``: transforms that take any
structure of inputs (a tuple, a dict, nested) and transform its images consistently, with one
draw of random parameters per call.

Which entries are images follows torchvision's rule for inputs without ``tv_tensors``: every
PIL image, and the first plain tensor when the sample holds no PIL image; everything else
(labels, other tensors, strings) passes through unchanged. Ember has no ``tv_tensors``
(bounding boxes, masks, videos, key points), so the transforms that exist only for them
(``SanitizeBoundingBoxes``, ``RandomIoUCrop``, ``ClampBoundingBoxes``…) are absent.

Random parameters are drawn with Ember's RNG through torchvision v2's calls in its order;
Ember's generator is not PyTorch's, so values drawn under the same seed differ."""
import math
from collections.abc import Sequence

import numpy as np

import ember
from ember import nn

from .. import transforms as _v1
from .. import autoaugment as _aa
from .._functional_pil import _is_pil_image
from ..functional import InterpolationMode, _check_interpolation
from ..autoaugment import AutoAugmentPolicy
from . import functional as F

__all__ = ["Transform", "Compose", "Identity", "Lambda", "RandomApply", "RandomChoice",
           "RandomOrder", "ToImage", "ToPureTensor", "PILToTensor", "ToPILImage", "ToTensor",
           "ToDtype", "ConvertImageDtype", "Normalize", "Resize", "CenterCrop", "Pad",
           "RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip",
           "RandomRotation", "RandomAffine", "RandomPerspective", "ColorJitter", "Grayscale",
           "RandomGrayscale", "RGB", "GaussianBlur", "GaussianNoise", "RandomErasing",
           "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness",
           "RandomAutocontrast", "RandomEqualize", "ElasticTransform", "FiveCrop", "TenCrop",
           "LinearTransformation", "RandomChannelPermutation", "AutoAugment", "RandAugment",
           "TrivialAugmentWide", "AugMix", "AutoAugmentPolicy", "InterpolationMode"]


def _flatten(tree):
    """Leaves of nested tuples/lists/dicts, and a function rebuilding the structure."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(x) for x in tree]
        leaves = [leaf for p in parts for leaf in p[0]]
        kind = type(tree)

        def rebuild(values):
            out, k = [], 0
            for p in parts:
                n = len(p[0])
                out.append(p[1](values[k:k + n]))
                k += n
            return kind(out)
        return leaves, rebuild
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, rebuild_values = _flatten([tree[k] for k in keys])

        def rebuild(values):
            return type(tree)(zip(keys, rebuild_values(values)))
        return leaves, rebuild
    return [tree], lambda values: values[0]


def _image_mask(flat):
    transform_pure_tensor = not any(_is_pil_image(x) for x in flat)
    mask = []
    for x in flat:
        if _is_pil_image(x):
            mask.append(True)
        elif isinstance(x, ember.Tensor) and transform_pure_tensor:
            mask.append(True)
            transform_pure_tensor = False
        else:
            mask.append(False)
    return mask


class Transform(nn.Module):
    """Base class: subclasses write ``make_params(flat_inputs)`` (the random draws, once per
    call, from the images of the sample) and ``transform(inpt, params)`` (one image)."""

    def make_params(self, flat_inputs):
        return {}

    def transform(self, inpt, params):
        raise NotImplementedError(f"{type(self).__name__} must implement transform(inpt, "
                                  f"params)")

    def _needs_transform_list(self, flat):
        return _image_mask(flat)

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        flat, rebuild = _flatten(sample)
        mask = self._needs_transform_list(flat)
        params = self.make_params([x for x, m in zip(flat, mask) if m])
        out = [self.transform(x, params) if m else x for x, m in zip(flat, mask)]
        return rebuild(out)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self.__dict__.items()
                         if not k.startswith("_") and k != "training")


class _RandomApplyTransform(Transform):
    def __init__(self, p=0.5):
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__()
        self.p = p

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        if ember.rand(1).item() >= self.p:
            return sample
        return super().forward(sample)


def _first_image(flat_inputs):
    if not flat_inputs:
        raise TypeError("No image was found in the sample")
    return flat_inputs[0]


def _query_chw(flat_inputs):
    return F.get_dimensions(_first_image(flat_inputs))


def _fill(img, fill):
    if fill is None:
        return None
    if isinstance(img, ember.Tensor):
        channels = F.get_dimensions(img)[0]
        if isinstance(fill, (int, float)):
            return [float(fill)] * channels
        return [float(f) for f in fill]
    return fill


class Compose(Transform):
    def __init__(self, transforms):
        super().__init__()
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        if not transforms:
            raise ValueError("Pass at least one transform")
        self.transforms = transforms

    def forward(self, *inputs):
        needs_unpacking = len(inputs) > 1
        for t in self.transforms:
            outputs = t(*inputs)
            inputs = outputs if needs_unpacking else (outputs,)
        return outputs


class Identity(Transform):
    def forward(self, *inputs):
        return inputs if len(inputs) > 1 else inputs[0]


class Lambda(Transform):
    """``lambd`` applied to every input of the given ``types`` (default: everything)."""

    def __init__(self, lambd, *types):
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got "
                            f"{repr(type(lambd).__name__)}")
        self.lambd = lambd
        self.types = types or (object,)

    def _needs_transform_list(self, flat):
        return [isinstance(x, self.types) for x in flat]

    def transform(self, inpt, params):
        return self.lambd(inpt)


class RandomApply(Transform):
    def __init__(self, transforms, p=0.5):
        super().__init__()
        if not isinstance(transforms, (Sequence, nn.ModuleList)):
            raise TypeError("Argument transforms should be a sequence of callables or a "
                            "`nn.ModuleList`")
        self.transforms = transforms
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = p

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        if ember.rand(1).item() >= self.p:
            return sample
        for t in self.transforms:
            sample = t(sample)
        return sample


class RandomChoice(Transform):
    def __init__(self, transforms, p=None):
        super().__init__()
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        if p is None:
            p = [1] * len(transforms)
        elif len(p) != len(transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != "
                             f"{len(transforms)}")
        total = sum(p)
        self.transforms = transforms
        self.p = [prob / total for prob in p]

    def forward(self, *inputs):
        idx = int(ember.multinomial(ember.tensor(self.p), 1).item())
        return self.transforms[idx](*inputs)


class RandomOrder(Transform):
    def __init__(self, transforms):
        super().__init__()
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        self.transforms = transforms

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        for idx in ember.randperm(len(self.transforms)).tolist():
            sample = self.transforms[idx](sample)
        return sample


class ToImage(Transform):
    """PIL images, ndarrays and tensors to ``CHW`` image tensors."""

    def _needs_transform_list(self, flat):
        mask = _image_mask(flat)
        return [m or isinstance(x, np.ndarray) for x, m in zip(flat, mask)]

    def transform(self, inpt, params):
        return F.to_image(inpt)


class ToPureTensor(Transform):
    def transform(self, inpt, params):
        return inpt


class PILToTensor(Transform):
    def _needs_transform_list(self, flat):
        return [_is_pil_image(x) for x in flat]

    def transform(self, inpt, params):
        return F.pil_to_tensor(inpt)


class ToPILImage(Transform):
    def __init__(self, mode=None):
        super().__init__()
        self.mode = mode

    def _needs_transform_list(self, flat):
        mask = _image_mask(flat)
        return [(m and not _is_pil_image(x)) or isinstance(x, np.ndarray)
                for x, m in zip(flat, mask)]

    def transform(self, inpt, params):
        return F.to_pil_image(inpt, mode=self.mode)


class ToTensor(Transform):
    """v1's ``to_tensor`` (deprecated in torchvision v2 in favour of ``ToImage`` +
    ``ToDtype(scale=True)``)."""

    def _needs_transform_list(self, flat):
        return [_is_pil_image(x) or isinstance(x, np.ndarray) for x in flat]

    def transform(self, inpt, params):
        return F.to_tensor(inpt)


class ToDtype(Transform):
    """Cast images to ``dtype`` (rescaling value ranges when ``scale``). A dict maps input
    types to dtypes; the key ``"others"`` covers the rest."""

    def __init__(self, dtype, scale=False):
        super().__init__()
        if not isinstance(dtype, (dict, ember.dtype)):
            raise ValueError(f"dtype must be a dict or a torch.dtype, got {type(dtype)} instead")
        self.dtype = dtype
        self.scale = scale

    def transform(self, inpt, params):
        if not isinstance(inpt, ember.Tensor):
            return inpt
        dtype = self.dtype
        if isinstance(dtype, dict):
            dtype = dtype.get(ember.Tensor, dtype.get("others"))
            if dtype is None:
                return inpt
        return F.to_dtype(inpt, dtype=dtype, scale=self.scale)


class ConvertImageDtype(Transform):
    def __init__(self, dtype=ember.float32):
        super().__init__()
        self.dtype = dtype

    def transform(self, inpt, params):
        return F.to_dtype(inpt, dtype=self.dtype, scale=True)


class Normalize(Transform):
    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean = list(mean)
        self.std = list(std)
        self.inplace = inplace

    def transform(self, inpt, params):
        return F.normalize(inpt, mean=self.mean, std=self.std, inplace=self.inplace)


class Resize(Transform):
    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        super().__init__()
        if isinstance(size, int):
            size = [size]
        elif isinstance(size, Sequence) and len(size) in {1, 2}:
            size = list(size)
        elif size is None:
            if not isinstance(max_size, int):
                raise ValueError(f"max_size must be an integer when size is None, but got "
                                 f"{max_size} instead.")
        else:
            raise ValueError(f"size can be an integer, a sequence of one or two integers, or "
                             f"None, but got {size} instead.")
        self.size = size
        self.interpolation = _check_interpolation(interpolation)
        self.max_size = max_size
        self.antialias = antialias

    def transform(self, inpt, params):
        return F.resize(inpt, self.size, interpolation=self.interpolation,
                        max_size=self.max_size, antialias=self.antialias)


class CenterCrop(Transform):
    def __init__(self, size):
        super().__init__()
        self.size = _v1._setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def transform(self, inpt, params):
        return F.center_crop(inpt, output_size=self.size)


class Pad(Transform):
    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        _v1.Pad(padding, fill, padding_mode)  # torchvision's argument checks
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def transform(self, inpt, params):
        return F.pad(inpt, padding=self.padding, fill=self.fill, padding_mode=self.padding_mode)


class RandomCrop(Transform):
    def __init__(self, size, padding=None, pad_if_needed=False, fill=0,
                 padding_mode="constant"):
        super().__init__()
        self.size = _v1._setup_size(size, "Please provide only two dimensions (h, w) for size.")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def make_params(self, flat_inputs):
        _, padded_height, padded_width = _query_chw(flat_inputs)
        pad = [0, 0, 0, 0]  # left, top, right, bottom
        if self.padding is not None:
            p = self.padding
            p = [p] * 4 if isinstance(p, int) else list(p)
            pad = (p * 4)[:4] if len(p) == 1 else ([p[0], p[1], p[0], p[1]] if len(p) == 2
                                                   else p)
            padded_height += pad[1] + pad[3]
            padded_width += pad[0] + pad[2]
        cropped_height, cropped_width = self.size
        if self.pad_if_needed:
            if padded_height < cropped_height:
                diff = cropped_height - padded_height
                pad[1] += diff
                pad[3] += diff
                padded_height += 2 * diff
            if padded_width < cropped_width:
                diff = cropped_width - padded_width
                pad[0] += diff
                pad[2] += diff
                padded_width += 2 * diff
        if padded_height < cropped_height or padded_width < cropped_width:
            raise ValueError(f"Required crop size {(cropped_height, cropped_width)} is larger "
                             f"than {'padded ' if self.padding is not None else ''}input image "
                             f"size {(padded_height, padded_width)}.")
        top = (int(ember.randint(0, padded_height - cropped_height + 1, size=()).item())
               if padded_height > cropped_height else 0)
        left = (int(ember.randint(0, padded_width - cropped_width + 1, size=()).item())
                if padded_width > cropped_width else 0)
        return dict(padding=pad, needs_pad=any(pad), top=top, left=left,
                    height=cropped_height, width=cropped_width)

    def transform(self, inpt, params):
        if params["needs_pad"]:
            inpt = F.pad(inpt, padding=params["padding"], fill=self.fill,
                         padding_mode=self.padding_mode)
        return F.crop(inpt, top=params["top"], left=params["left"], height=params["height"],
                      width=params["width"])


class RandomResizedCrop(Transform):
    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        checked = _v1.RandomResizedCrop(size, scale, ratio, interpolation, antialias)
        self.size, self.scale, self.ratio = checked.size, scale, ratio
        self.interpolation, self.antialias = checked.interpolation, antialias

    def make_params(self, flat_inputs):
        i, j, h, w = _v1.RandomResizedCrop.get_params(_first_image(flat_inputs), self.scale,
                                                      self.ratio)
        return dict(top=i, left=j, height=h, width=w)

    def transform(self, inpt, params):
        return F.resized_crop(inpt, **params, size=self.size, interpolation=self.interpolation,
                              antialias=self.antialias)


class RandomHorizontalFlip(_RandomApplyTransform):
    def transform(self, inpt, params):
        return F.horizontal_flip(inpt)


class RandomVerticalFlip(_RandomApplyTransform):
    def transform(self, inpt, params):
        return F.vertical_flip(inpt)


class RandomRotation(Transform):
    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        super().__init__()
        checked = _v1.RandomRotation(degrees, interpolation, expand, center, fill)
        self.degrees, self.interpolation = checked.degrees, checked.interpolation
        self.expand, self.center, self.fill = expand, center, fill

    def make_params(self, flat_inputs):
        return dict(angle=_v1._uniform(self.degrees[0], self.degrees[1]))

    def transform(self, inpt, params):
        return F.rotate(inpt, params["angle"], interpolation=self.interpolation,
                        expand=self.expand, center=self.center, fill=_fill(inpt, self.fill))


class RandomAffine(Transform):
    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        super().__init__()
        checked = _v1.RandomAffine(degrees, translate, scale, shear, interpolation, fill,
                                    center)
        self.degrees, self.translate, self.scale = checked.degrees, translate, scale
        self.shear, self.interpolation = checked.shear, checked.interpolation
        self.fill, self.center = fill, center

    def make_params(self, flat_inputs):
        _, height, width = _query_chw(flat_inputs)
        angle, translate, scale, shear = _v1.RandomAffine.get_params(
            self.degrees, self.translate, self.scale, self.shear, [width, height])
        return dict(angle=angle, translate=list(translate), scale=scale, shear=list(shear))

    def transform(self, inpt, params):
        return F.affine(inpt, **params, interpolation=self.interpolation,
                        fill=_fill(inpt, self.fill), center=self.center)


class RandomPerspective(_RandomApplyTransform):
    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        super().__init__(p=p)
        if not (0 <= distortion_scale <= 1):
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        self.distortion_scale = distortion_scale
        self.interpolation = _check_interpolation(interpolation)
        self.fill = fill

    def make_params(self, flat_inputs):
        _, height, width = _query_chw(flat_inputs)
        start, end = _v1.RandomPerspective.get_params(width, height, self.distortion_scale)
        return dict(startpoints=start, endpoints=end)

    def transform(self, inpt, params):
        return F.perspective(inpt, **params, interpolation=self.interpolation,
                             fill=_fill(inpt, self.fill))


class ColorJitter(Transform):
    def __init__(self, brightness=None, contrast=None, saturation=None, hue=None):
        super().__init__()
        check = _v1.ColorJitter._check_input
        self.brightness = None if brightness is None else check(brightness, "brightness")
        self.contrast = None if contrast is None else check(contrast, "contrast")
        self.saturation = None if saturation is None else check(saturation, "saturation")
        self.hue = None if hue is None else check(hue, "hue", center=0, bound=(-0.5, 0.5),
                                                  clip_first_on_zero=False)

    def make_params(self, flat_inputs):
        fn_idx, b, c, s, h = _v1.ColorJitter.get_params(self.brightness, self.contrast,
                                                        self.saturation, self.hue)
        return dict(fn_idx=fn_idx.tolist(), brightness_factor=b, contrast_factor=c,
                    saturation_factor=s, hue_factor=h)

    def transform(self, inpt, params):
        output = inpt
        for fn_id in params["fn_idx"]:
            if fn_id == 0 and params["brightness_factor"] is not None:
                output = F.adjust_brightness(output, params["brightness_factor"])
            elif fn_id == 1 and params["contrast_factor"] is not None:
                output = F.adjust_contrast(output, params["contrast_factor"])
            elif fn_id == 2 and params["saturation_factor"] is not None:
                output = F.adjust_saturation(output, params["saturation_factor"])
            elif fn_id == 3 and params["hue_factor"] is not None:
                output = F.adjust_hue(output, params["hue_factor"])
        return output


class Grayscale(Transform):
    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def transform(self, inpt, params):
        return F.rgb_to_grayscale(inpt, num_output_channels=self.num_output_channels)


class RandomGrayscale(_RandomApplyTransform):
    def __init__(self, p=0.1):
        super().__init__(p=p)

    def make_params(self, flat_inputs):
        return dict(num_input_channels=_query_chw(flat_inputs)[0])

    def transform(self, inpt, params):
        return F.rgb_to_grayscale(inpt, num_output_channels=params["num_input_channels"])


class RGB(Transform):
    """Grayscale images to three channels; RGB images unchanged."""

    def transform(self, inpt, params):
        return F.grayscale_to_rgb(inpt)


class GaussianBlur(Transform):
    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        checked = _v1.GaussianBlur(kernel_size, sigma)
        self.kernel_size, self.sigma = checked.kernel_size, checked.sigma

    def make_params(self, flat_inputs):
        sigma = _v1._uniform(self.sigma[0], self.sigma[1])
        return dict(sigma=[sigma, sigma])

    def transform(self, inpt, params):
        return F.gaussian_blur(inpt, self.kernel_size, **params)


class GaussianNoise(Transform):
    def __init__(self, mean=0.0, sigma=0.1, clip=True):
        super().__init__()
        self.mean, self.sigma, self.clip = mean, sigma, clip

    def transform(self, inpt, params):
        return F.gaussian_noise(inpt, mean=self.mean, sigma=self.sigma, clip=self.clip)


class RandomErasing(_RandomApplyTransform):
    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0.0, inplace=False):
        super().__init__(p=p)
        checked = _v1.RandomErasing(p, scale, ratio, value, inplace)
        self.scale, self.ratio, self.inplace = scale, ratio, inplace
        if isinstance(value, (int, float)):
            self.value = [float(value)]
        elif isinstance(value, str):
            self.value = None
        else:
            self.value = [float(v) for v in value]

    def make_params(self, flat_inputs):
        img = _first_image(flat_inputs)
        img_c, img_h, img_w = F.get_dimensions(img)
        if self.value is not None and len(self.value) not in (1, img_c):
            raise ValueError(f"If value is a sequence, it should have either a single value or "
                             f"{img_c} (number of inpt channels)")
        area = img_h * img_w
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            erase_area = area * _v1._uniform(self.scale[0], self.scale[1])
            aspect_ratio = math.exp(_v1._uniform(log_ratio[0], log_ratio[1]))
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if self.value is None:
                v = ember.empty([img_c, h, w], dtype=ember.float32).normal_()
            else:
                v = ember.tensor(self.value)[:, None, None]
            i = _v1._randint(0, img_h - h + 1)
            j = _v1._randint(0, img_w - w + 1)
            return dict(i=i, j=j, h=h, w=w, v=v)
        return dict(i=0, j=0, h=img_h, w=img_w, v=None)

    def transform(self, inpt, params):
        if params["v"] is None:
            return inpt
        if not isinstance(inpt, ember.Tensor):
            raise TypeError("RandomErasing works on image tensors; convert PIL images with "
                            "ToImage first")
        return F.erase(inpt, **params, inplace=self.inplace)


class RandomInvert(_RandomApplyTransform):
    def transform(self, inpt, params):
        return F.invert(inpt)


class RandomPosterize(_RandomApplyTransform):
    def __init__(self, bits, p=0.5):
        super().__init__(p=p)
        self.bits = bits

    def transform(self, inpt, params):
        return F.posterize(inpt, bits=self.bits)


class RandomSolarize(_RandomApplyTransform):
    def __init__(self, threshold, p=0.5):
        super().__init__(p=p)
        self.threshold = threshold

    def transform(self, inpt, params):
        return F.solarize(inpt, threshold=self.threshold)


class RandomAdjustSharpness(_RandomApplyTransform):
    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p=p)
        self.sharpness_factor = sharpness_factor

    def transform(self, inpt, params):
        return F.adjust_sharpness(inpt, sharpness_factor=self.sharpness_factor)


class RandomAutocontrast(_RandomApplyTransform):
    def transform(self, inpt, params):
        return F.autocontrast(inpt)


class RandomEqualize(_RandomApplyTransform):
    def transform(self, inpt, params):
        return F.equalize(inpt)


class ElasticTransform(Transform):
    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        super().__init__()
        checked = _v1.ElasticTransform(alpha, sigma, interpolation, fill)
        self.alpha, self.sigma = checked.alpha, checked.sigma
        self.interpolation, self.fill = checked.interpolation, fill

    def make_params(self, flat_inputs):
        size = F.get_size(_first_image(flat_inputs))
        return dict(displacement=_v1.ElasticTransform.get_params(self.alpha, self.sigma, size))

    def transform(self, inpt, params):
        return F.elastic(inpt, **params, interpolation=self.interpolation,
                         fill=_fill(inpt, self.fill))


class FiveCrop(Transform):
    def __init__(self, size):
        super().__init__()
        self.size = _v1._setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def transform(self, inpt, params):
        return F.five_crop(inpt, self.size)


class TenCrop(Transform):
    def __init__(self, size, vertical_flip=False):
        super().__init__()
        self.size = _v1._setup_size(size, "Please provide only two dimensions (h, w) for size.")
        self.vertical_flip = vertical_flip

    def transform(self, inpt, params):
        return F.ten_crop(inpt, self.size, vertical_flip=self.vertical_flip)


class LinearTransformation(Transform):
    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        self._linear = _v1.LinearTransformation(transformation_matrix, mean_vector)

    def transform(self, inpt, params):
        return self._linear(inpt)


class RandomChannelPermutation(Transform):
    def make_params(self, flat_inputs):
        return dict(permutation=ember.randperm(_query_chw(flat_inputs)[0]).tolist())

    def transform(self, inpt, params):
        return F.permute_channels(inpt, params["permutation"])


class _V1Policy(Transform):
    # The augmentation policies draw per operation as they go, so the v1 module runs on the
    # sample's image (one image per sample, as torchvision's policies require).
    _cls = None

    def __init__(self, *args, **kwargs):
        super().__init__()
        self._policy = self._cls(*args, **kwargs)

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        flat, rebuild = _flatten(sample)
        mask = self._needs_transform_list(flat)
        if sum(mask) > 1:
            raise TypeError(f"{type(self).__name__} transforms one image per sample, found "
                            f"{sum(mask)}")
        return rebuild([self._policy(x) if m else x for x, m in zip(flat, mask)])

    def __getattr__(self, name):
        if name != "_policy" and "_policy" in self.__dict__.get("_modules", {}):
            return getattr(self.__dict__["_modules"]["_policy"], name)
        return super().__getattr__(name)


class AutoAugment(_V1Policy):
    _cls = _aa.AutoAugment


class RandAugment(_V1Policy):
    _cls = _aa.RandAugment


class TrivialAugmentWide(_V1Policy):
    _cls = _aa.TrivialAugmentWide


class AugMix(_V1Policy):
    _cls = _aa.AugMix
