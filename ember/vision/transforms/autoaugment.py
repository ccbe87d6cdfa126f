"""Learned and random augmentation policies: AutoAugment (Cubuk et al., 2018), RandAugment
(Cubuk et al., 2019), TrivialAugment Wide (Müller & Hutter, 2021) and AugMix (Hendrycks et
al., 2019), with torchvision's operations, magnitude bins and parameter draws (the same Ember
RNG calls in the same order)."""
import math
from enum import Enum

import ember
from ember import nn

from . import functional as F
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _apply_op(img, op_name, magnitude, interpolation, fill):
    if op_name == "ShearX":
        # Shear about the top-left corner, as the policies were learned with (PIL's origin).
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0,
                        shear=[math.degrees(math.atan(magnitude)), 0.0],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "ShearY":
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0,
                        shear=[0.0, math.degrees(math.atan(magnitude))],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "TranslateX":
        return F.affine(img, angle=0.0, translate=[int(magnitude), 0], scale=1.0,
                        interpolation=interpolation, shear=[0.0, 0.0], fill=fill)
    if op_name == "TranslateY":
        return F.affine(img, angle=0.0, translate=[0, int(magnitude)], scale=1.0,
                        interpolation=interpolation, shear=[0.0, 0.0], fill=fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation=interpolation, fill=fill)
    if op_name == "Brightness":
        return F.adjust_brightness(img, 1.0 + magnitude)
    if op_name == "Color":
        return F.adjust_saturation(img, 1.0 + magnitude)
    if op_name == "Contrast":
        return F.adjust_contrast(img, 1.0 + magnitude)
    if op_name == "Sharpness":
        return F.adjust_sharpness(img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return F.autocontrast(img)
    if op_name == "Equalize":
        return F.equalize(img)
    if op_name == "Invert":
        return F.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _tensor_fill(img, fill):
    if isinstance(img, ember.Tensor):
        channels = F.get_dimensions(img)[0]
        if isinstance(fill, (int, float)):
            return [float(fill)] * channels
        if fill is not None:
            return [float(f) for f in fill]
    return fill


class AutoAugmentPolicy(Enum):
    """AutoAugment policies learned on different datasets."""
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


def _policy(text):
    # "Op prob magnitude|Op prob magnitude" per sub-policy; "-" is no magnitude.
    subs = []
    for line in text.split(";"):
        pair = []
        for op in line.split("|"):
            name, p, m = op.split()
            pair.append((name, float(p), None if m == "-" else int(m)))
        subs.append(tuple(pair))
    return subs


_POLICIES = {
    AutoAugmentPolicy.IMAGENET: _policy(
        "Posterize .4 8|Rotate .6 9;Solarize .6 5|AutoContrast .6 -;Equalize .8 -|Equalize .6 -;"
        "Posterize .6 7|Posterize .6 6;Equalize .4 -|Solarize .2 4;Equalize .4 -|Rotate .8 8;"
        "Solarize .6 3|Equalize .6 -;Posterize .8 5|Equalize 1 -;Rotate .2 3|Solarize .6 8;"
        "Equalize .6 -|Posterize .4 6;Rotate .8 8|Color .4 0;Rotate .4 9|Equalize .6 -;"
        "Equalize 0 -|Equalize .8 -;Invert .6 -|Equalize 1 -;Color .6 4|Contrast 1 8;"
        "Rotate .8 8|Color 1 2;Color .8 8|Solarize .8 7;Sharpness .4 7|Invert .6 -;"
        "ShearX .6 5|Equalize 1 -;Color .4 0|Equalize .6 -;Equalize .4 -|Solarize .2 4;"
        "Solarize .6 5|AutoContrast .6 -;Invert .6 -|Equalize 1 -;Color .6 4|Contrast 1 8;"
        "Equalize .8 -|Equalize .6 -"),
    AutoAugmentPolicy.CIFAR10: _policy(
        "Invert .1 -|Contrast .2 6;Rotate .7 2|TranslateX .3 9;Sharpness .8 1|Sharpness .9 3;"
        "ShearY .5 8|TranslateY .7 9;AutoContrast .5 -|Equalize .9 -;ShearY .2 7|Posterize .3 7;"
        "Color .4 3|Brightness .6 7;Sharpness .3 9|Brightness .7 9;Equalize .6 -|Equalize .5 -;"
        "Contrast .6 7|Sharpness .6 5;Color .7 7|TranslateX .5 8;"
        "Equalize .3 -|AutoContrast .4 -;TranslateY .4 3|Sharpness .2 6;"
        "Brightness .9 6|Color .2 8;Solarize .5 2|Invert 0 -;Equalize .2 -|AutoContrast .6 -;"
        "Equalize .2 -|Equalize .6 -;Color .9 9|Equalize .6 -;AutoContrast .8 -|Solarize .2 8;"
        "Brightness .1 3|Color .7 0;Solarize .4 5|AutoContrast .9 -;"
        "TranslateY .9 9|TranslateY .7 9;AutoContrast .9 -|Solarize .8 3;"
        "Equalize .8 -|Invert .1 -;TranslateY .7 9|AutoContrast .9 -"),
    AutoAugmentPolicy.SVHN: _policy(
        "ShearX .9 4|Invert .2 -;ShearY .9 8|Invert .7 -;Equalize .6 -|Solarize .6 6;"
        "Invert .9 -|Equalize .6 -;Equalize .6 -|Rotate .9 3;ShearX .9 4|AutoContrast .8 -;"
        "ShearY .9 8|Invert .4 -;ShearY .9 5|Solarize .2 6;Invert .9 -|AutoContrast .8 -;"
        "Equalize .6 -|Rotate .9 3;ShearX .9 4|Solarize .3 3;ShearY .8 8|Invert .7 -;"
        "Equalize .9 -|TranslateY .6 6;Invert .9 -|Equalize .6 -;Contrast .3 3|Rotate .8 4;"
        "Invert .8 -|TranslateY 0 2;ShearY .7 6|Solarize .4 8;Invert .6 -|Rotate .8 4;"
        "ShearY .3 7|TranslateX .9 3;ShearX .1 6|Invert .6 -;Solarize .7 2|TranslateY .6 7;"
        "ShearY .8 4|Invert .8 -;ShearX .7 9|TranslateY .8 3;ShearY .8 5|AutoContrast .7 -;"
        "ShearX .7 2|Invert .1 -"),
}


def _linspace(a, b, n):
    return ember.linspace(a, b, n)


def _posterize_bins(num_bins, top, span):
    return (top - (ember.arange(num_bins) / ((num_bins - 1) / span)).round()).int()


def _no_magnitude():
    return ember.tensor(0.0)


class AutoAugment(nn.Module):
    """AutoAugment: one of the policy's sub-policies at random, each of its two operations
    applied with its probability and magnitude (sign random). Tensors must be uint8."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.policy = policy
        self.interpolation = interpolation
        self.fill = fill
        self.policies = self._get_policies(policy)

    def _get_policies(self, policy):
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        return _POLICIES[policy]

    def _augmentation_space(self, num_bins, image_size):
        return {
            "ShearX": (_linspace(0.0, 0.3, num_bins), True),
            "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, 150.0 / 331.0 * image_size[1], num_bins), True),
            "TranslateY": (_linspace(0.0, 150.0 / 331.0 * image_size[0], num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Brightness": (_linspace(0.0, 0.9, num_bins), True),
            "Color": (_linspace(0.0, 0.9, num_bins), True),
            "Contrast": (_linspace(0.0, 0.9, num_bins), True),
            "Sharpness": (_linspace(0.0, 0.9, num_bins), True),
            "Posterize": (_posterize_bins(num_bins, 8, 4), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (_no_magnitude(), False),
            "Equalize": (_no_magnitude(), False),
            "Invert": (_no_magnitude(), False),
        }

    @staticmethod
    def get_params(transform_num):
        policy_id = int(ember.randint(transform_num, (1,)).item())
        probs = ember.rand((2,))
        signs = ember.randint(2, (2,))
        return policy_id, probs, signs

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        transform_id, probs, signs = self.get_params(len(self.policies))
        op_meta = self._augmentation_space(10, (height, width))
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[transform_id]):
            if probs[i].item() <= p:
                magnitudes, signed = op_meta[op_name]
                magnitude = (float(magnitudes[magnitude_id].item())
                             if magnitude_id is not None else 0.0)
                if signed and signs[i].item() == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(nn.Module):
    """RandAugment: ``num_ops`` operations drawn uniformly, all at bin ``magnitude`` of
    ``num_magnitude_bins``."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins, image_size):
        return {
            "Identity": (_no_magnitude(), False),
            "ShearX": (_linspace(0.0, 0.3, num_bins), True),
            "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, 150.0 / 331.0 * image_size[1], num_bins), True),
            "TranslateY": (_linspace(0.0, 150.0 / 331.0 * image_size[0], num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Brightness": (_linspace(0.0, 0.9, num_bins), True),
            "Color": (_linspace(0.0, 0.9, num_bins), True),
            "Contrast": (_linspace(0.0, 0.9, num_bins), True),
            "Sharpness": (_linspace(0.0, 0.9, num_bins), True),
            "Posterize": (_posterize_bins(num_bins, 8, 4), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (_no_magnitude(), False),
            "Equalize": (_no_magnitude(), False),
        }

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        op_meta = self._augmentation_space(self.num_magnitude_bins, (height, width))
        for _ in range(self.num_ops):
            op_index = int(ember.randint(len(op_meta), (1,)).item())
            op_name = list(op_meta.keys())[op_index]
            magnitudes, signed = op_meta[op_name]
            magnitude = float(magnitudes[self.magnitude].item()) if magnitudes.ndim > 0 else 0.0
            if signed and ember.randint(2, (1,)).item():
                magnitude *= -1.0
            img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}"
                f", num_magnitude_bins={self.num_magnitude_bins}, interpolation="
                f"{self.interpolation}, fill={self.fill})")


class TrivialAugmentWide(nn.Module):
    """TrivialAugment Wide: one operation, at a magnitude drawn uniformly from its bins."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__()
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins):
        return {
            "Identity": (_no_magnitude(), False),
            "ShearX": (_linspace(0.0, 0.99, num_bins), True),
            "ShearY": (_linspace(0.0, 0.99, num_bins), True),
            "TranslateX": (_linspace(0.0, 32.0, num_bins), True),
            "TranslateY": (_linspace(0.0, 32.0, num_bins), True),
            "Rotate": (_linspace(0.0, 135.0, num_bins), True),
            "Brightness": (_linspace(0.0, 0.99, num_bins), True),
            "Color": (_linspace(0.0, 0.99, num_bins), True),
            "Contrast": (_linspace(0.0, 0.99, num_bins), True),
            "Sharpness": (_linspace(0.0, 0.99, num_bins), True),
            "Posterize": (_posterize_bins(num_bins, 8, 6), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (_no_magnitude(), False),
            "Equalize": (_no_magnitude(), False),
        }

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        op_meta = self._augmentation_space(self.num_magnitude_bins)
        op_index = int(ember.randint(len(op_meta), (1,)).item())
        op_name = list(op_meta.keys())[op_index]
        magnitudes, signed = op_meta[op_name]
        magnitude = (float(magnitudes[ember.randint(len(magnitudes), (1,), dtype=ember.long)]
                           .item()) if magnitudes.ndim > 0 else 0.0)
        if signed and ember.randint(2, (1,)).item():
            magnitude *= -1.0
        return _apply_op(img, op_name, magnitude, self.interpolation, fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class AugMix(nn.Module):
    """AugMix: ``mixture_width`` chains of random operations, mixed with Dirichlet weights
    and blended with the original by a Beta-distributed weight."""

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__()
        self._PARAMETER_MAX = 10
        if not (1 <= severity <= self._PARAMETER_MAX):
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got "
                             f"{severity} instead.")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins, image_size):
        s = {
            "ShearX": (_linspace(0.0, 0.3, num_bins), True),
            "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, image_size[1] / 3.0, num_bins), True),
            "TranslateY": (_linspace(0.0, image_size[0] / 3.0, num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Posterize": (_posterize_bins(num_bins, 4, 4), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (_no_magnitude(), False),
            "Equalize": (_no_magnitude(), False),
        }
        if self.all_ops:
            s.update({
                "Brightness": (_linspace(0.0, 0.9, num_bins), True),
                "Color": (_linspace(0.0, 0.9, num_bins), True),
                "Contrast": (_linspace(0.0, 0.9, num_bins), True),
                "Sharpness": (_linspace(0.0, 0.9, num_bins), True),
            })
        return s

    def _sample_dirichlet(self, params):
        from ember.distributions import Dirichlet
        return Dirichlet(params).sample()

    def forward(self, orig_img):
        fill = self.fill
        _, height, width = F.get_dimensions(orig_img)
        if isinstance(orig_img, ember.Tensor):
            img = orig_img
            fill = _tensor_fill(img, fill)
        else:
            img = F.pil_to_tensor(orig_img)
        op_meta = self._augmentation_space(self._PARAMETER_MAX, (height, width))
        orig_dims = list(img.shape)
        batch = img.view([1] * max(4 - img.ndim, 0) + orig_dims)
        batch_dims = [batch.shape[0]] + [1] * (batch.ndim - 1)
        n = batch_dims[0]
        m = self._sample_dirichlet(ember.tensor([self.alpha, self.alpha]).expand(n, -1))
        combined_weights = self._sample_dirichlet(
            ember.tensor([self.alpha] * self.mixture_width).expand(n, -1)) * m[:, 1].view(n, -1)
        mix = m[:, 0].view(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = (self.chain_depth if self.chain_depth > 0
                     else int(ember.randint(low=1, high=4, size=(1,)).item()))
            for _ in range(depth):
                op_index = int(ember.randint(len(op_meta), (1,)).item())
                op_name = list(op_meta.keys())[op_index]
                magnitudes, signed = op_meta[op_name]
                magnitude = (float(magnitudes[ember.randint(self.severity, (1,),
                                                            dtype=ember.long)].item())
                             if magnitudes.ndim > 0 else 0.0)
                if signed and ember.randint(2, (1,)).item():
                    magnitude *= -1.0
                aug = _apply_op(aug, op_name, magnitude, self.interpolation, fill)
            mix = mix + combined_weights[:, i].view(batch_dims) * aug
        mix = mix.view(orig_dims).to(dtype=img.dtype)
        if not isinstance(orig_img, ember.Tensor):
            return F.to_pil_image(mix)
        return mix

    def __repr__(self):
        return (f"{self.__class__.__name__}(severity={self.severity}, mixture_width="
                f"{self.mixture_width}, chain_depth={self.chain_depth}, alpha={self.alpha}, "
                f"all_ops={self.all_ops}, interpolation={self.interpolation}, fill={self.fill})")
