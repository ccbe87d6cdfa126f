"""RegNet (Radosavovic et al., 2020): stages of residual bottleneck blocks whose widths and
depths follow a quantised linear rule (``BlockParams.from_init_params``); the Y models add
squeeze-and-excitation."""
import math
from collections import OrderedDict
from functools import partial
from typing import Optional

import ember
from ember import nn

from ..transforms._presets import ImageClassification, InterpolationMode  # noqa: F401
from ._api import register_model, Weights, WeightsEnum
from ._imagenet_categories import _IMAGENET_CATEGORIES
from ._legacy_interface import _load_weights, _ovewrite_named_param, handle_legacy_interface
from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ._channel_rounding import _make_divisible

_SIZES = ["400MF", "800MF", "1_6GF", "3_2GF", "8GF", "16GF", "32GF"]
__all__ = (["RegNet"] + [f"RegNet_{kind}_{size}_Weights" for kind in "YX" for size in _SIZES]
           + ["RegNet_Y_128GF_Weights"]
           + [f"regnet_{kind}_{size.lower()}" for kind in "yx" for size in _SIZES]
           + ["regnet_y_128gf"])


class SimpleStemIN(Conv2dNormActivation):
    """The stem: a 3x3/2 convolution, norm and activation."""

    def __init__(self, width_in, width_out, norm_layer, activation_layer):
        super().__init__(width_in, width_out, kernel_size=3, stride=2, norm_layer=norm_layer,
                         activation_layer=activation_layer)


class BottleneckTransform(nn.Sequential):
    """``a`` (1x1 to the bottleneck width), ``b`` (grouped 3x3 with ``stride``), ``se``
    (when ``se_ratio``), ``c`` (linear 1x1 to ``width_out``)."""

    def __init__(self, width_in, width_out, stride, norm_layer, activation_layer, group_width,
                 bottleneck_multiplier, se_ratio):
        layers = OrderedDict()
        w_b = int(round(width_out * bottleneck_multiplier))
        g = w_b // group_width
        layers["a"] = Conv2dNormActivation(width_in, w_b, kernel_size=1, stride=1,
                                           norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        layers["b"] = Conv2dNormActivation(w_b, w_b, kernel_size=3, stride=stride, groups=g,
                                           norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        if se_ratio:
            # The squeeze width follows the block's input width, not the bottleneck's.
            layers["se"] = SqueezeExcitation(input_channels=w_b,
                                             squeeze_channels=int(round(se_ratio * width_in)),
                                             activation=activation_layer)
        layers["c"] = Conv2dNormActivation(w_b, width_out, kernel_size=1, stride=1,
                                           norm_layer=norm_layer, activation_layer=None)
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """``x + f(x)`` (or ``proj(x) + f(x)`` when width or resolution change), then activation."""

    def __init__(self, width_in, width_out, stride, norm_layer, activation_layer, group_width=1,
                 bottleneck_multiplier=1.0, se_ratio=None):
        super().__init__()
        self.proj = None
        if (width_in != width_out) or (stride != 1):
            self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1, stride=stride,
                                             norm_layer=norm_layer, activation_layer=None)
        self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, activation_layer,
                                     group_width, bottleneck_multiplier, se_ratio)
        self.activation = activation_layer(inplace=True)

    def forward(self, x):
        shortcut = x if self.proj is None else self.proj(x)
        return self.activation(shortcut + self.f(x))


class AnyStage(nn.Sequential):
    """``depth`` blocks named ``block{stage}-{i}``; the first changes width and stride."""

    def __init__(self, width_in, width_out, stride, depth, block_constructor, norm_layer,
                 activation_layer, group_width, bottleneck_multiplier, se_ratio=None,
                 stage_index=0):
        super().__init__()
        for i in range(depth):
            block = block_constructor(width_in if i == 0 else width_out, width_out,
                                      stride if i == 0 else 1, norm_layer, activation_layer,
                                      group_width, bottleneck_multiplier, se_ratio)
            self.add_module(f"block{stage_index}-{i}", block)


class BlockParams:
    """Per-stage depths, widths, group widths, bottleneck multipliers and strides."""

    def __init__(self, depths, widths, group_widths, bottleneck_multipliers, strides,
                 se_ratio=None):
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(cls, depth, w_0, w_a, w_m, group_width, bottleneck_multiplier=1.0,
                         se_ratio=None, **kwargs):
        """The paper's parametrisation: block ``j`` has width ``w_0 + w_a * j``, snapped to
        ``w_0 * w_m**k`` (integer ``k``) and to a multiple of 8; consecutive blocks of equal
        width form a stage. Computed in float32, as the checkpoints' widths were."""
        quant = 8
        stride = 2
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError("Invalid RegNet settings")
        widths_cont = ember.arange(depth) * w_a + w_0
        block_capacity = ember.round(ember.log(widths_cont / w_0) / math.log(w_m))
        block_widths = (ember.round(ember.divide(w_0 * ember.pow(w_m, block_capacity), quant))
                        * quant).int().tolist()
        num_stages = len(set(block_widths))
        split_helper = zip(block_widths + [0], [0] + block_widths, block_widths + [0],
                           [0] + block_widths)
        splits = [w != wp or r != rp for w, wp, r, rp in split_helper]
        stage_widths = [w for w, t in zip(block_widths, splits[:-1]) if t]
        boundaries = [d for d, t in enumerate(splits) if t]
        stage_depths = [b - a for a, b in zip(boundaries, boundaries[1:])]
        strides = [stride] * num_stages
        bottleneck_multipliers = [bottleneck_multiplier] * num_stages
        group_widths = [group_width] * num_stages
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(
            stage_widths, bottleneck_multipliers, group_widths)
        return cls(depths=stage_depths, widths=stage_widths, group_widths=group_widths,
                   bottleneck_multipliers=bottleneck_multipliers, strides=strides,
                   se_ratio=se_ratio)

    def _get_expanded_params(self):
        return zip(self.widths, self.strides, self.depths, self.group_widths,
                   self.bottleneck_multipliers)

    @staticmethod
    def _adjust_widths_groups_compatibilty(stage_widths, bottleneck_ratios, group_widths):
        """Make each bottleneck width a multiple of its group width (shrinking the group width
        when it exceeds the bottleneck)."""
        widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios)]
        group_widths_min = [min(g, w_bot) for g, w_bot in zip(group_widths, widths)]
        ws_bot = [_make_divisible(w_bot, g) for w_bot, g in zip(widths, group_widths_min)]
        stage_widths = [int(w_bot / b) for w_bot, b in zip(ws_bot, bottleneck_ratios)]
        return stage_widths, group_widths_min


class RegNet(nn.Module):
    """``stem``, ``trunk_output`` (stages ``block1``…), pooling and ``fc``."""

    def __init__(self, block_params, num_classes=1000, stem_width=32, stem_type=None,
                 block_type=None, norm_layer=None, activation=None):
        super().__init__()
        stem_type = SimpleStemIN if stem_type is None else stem_type
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        block_type = ResBottleneckBlock if block_type is None else block_type
        activation = nn.ReLU if activation is None else activation
        self.stem = stem_type(3, stem_width, norm_layer, activation)
        current_width = stem_width
        blocks = []
        for i, (width_out, stride, depth, group_width, bottleneck_multiplier) in enumerate(
                block_params._get_expanded_params()):
            blocks.append((f"block{i + 1}", AnyStage(
                current_width, width_out, stride, depth, block_type, norm_layer, activation,
                group_width, bottleneck_multiplier, block_params.se_ratio, stage_index=i + 1)))
            current_width = width_out
        self.trunk_output = nn.Sequential(OrderedDict(blocks))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=current_width, out_features=num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.trunk_output(self.stem(x)))
        return self.fc(x.flatten(start_dim=1))


def _regnet(block_params, weights, progress, **kwargs):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    norm_layer = kwargs.pop("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    model = RegNet(block_params, norm_layer=norm_layer, **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


# What every checkpoint of this family shares, as torchvision keeps it.
_COMMON_META = {"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES}


class RegNet_X_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_x_16gf-2007eb11.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 54278536,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#me'
             'dium-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.058,
                    "acc@5": 94.944,
                },
            },
            "_ops": 15.941,
            "_file_size": 207.627,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_x_16gf-ba3796d7.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 54278536,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 82.716,
                    "acc@5": 96.196,
                },
            },
            "_ops": 15.941,
            "_file_size": 207.627,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_x_1_6gf-e3633e7f.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 9190136,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sm'
             'all-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 77.04,
                    "acc@5": 93.44,
                },
            },
            "_ops": 1.603,
            "_file_size": 35.339,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_x_1_6gf-a12f2b72.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 9190136,
            "recipe": ('https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 79.668,
                    "acc@5": 94.922,
                },
            },
            "_ops": 1.603,
            "_file_size": 35.339,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_x_32gf-9d47f8d0.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 107811560,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#la'
             'rge-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.622,
                    "acc@5": 95.248,
                },
            },
            "_ops": 31.736,
            "_file_size": 412.039,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_x_32gf-6eb8fdc6.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 107811560,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.014,
                    "acc@5": 96.288,
                },
            },
            "_ops": 31.736,
            "_file_size": 412.039,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_x_3_2gf-f342aeae.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 15296552,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#me'
             'dium-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 78.364,
                    "acc@5": 93.992,
                },
            },
            "_ops": 3.177,
            "_file_size": 58.756,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_x_3_2gf-7071aa85.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 15296552,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.196,
                    "acc@5": 95.43,
                },
            },
            "_ops": 3.177,
            "_file_size": 58.756,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_x_400mf-adf1edd5.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 5495976,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sm'
             'all-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 72.834,
                    "acc@5": 90.95,
                },
            },
            "_ops": 0.414,
            "_file_size": 21.258,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_x_400mf-62229a5f.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 5495976,
            "recipe": ('https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 74.864,
                    "acc@5": 92.322,
                },
            },
            "_ops": 0.414,
            "_file_size": 21.257,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_x_800mf-ad17e45c.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 7259656,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sm'
             'all-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 75.212,
                    "acc@5": 92.348,
                },
            },
            "_ops": 0.8,
            "_file_size": 27.945,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_x_800mf-94a99ebd.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 7259656,
            "recipe": ('https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 77.522,
                    "acc@5": 93.826,
                },
            },
            "_ops": 0.8,
            "_file_size": 27.945,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_x_8gf-03ceed89.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 39572648,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#me'
             'dium-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 79.344,
                    "acc@5": 94.686,
                },
            },
            "_ops": 7.995,
            "_file_size": 151.456,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_x_8gf-2b70d774.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 39572648,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.682,
                    "acc@5": 95.678,
                },
            },
            "_ops": 7.995,
            "_file_size": 151.456,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_128GF_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_128gf_swag-c8ce3e52.pth",
        transforms=partial(
            ImageClassification, crop_size=384,
            resize_size=384,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_META,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 644812894,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 88.228,
                    "acc@5": 98.682,
                },
            },
            "_ops": 374.57,
            "_file_size": 2461.564,
            "_docs": ('\n                These weights are learnt via transfer learning by '
             'end-to-end fine-tuning the original\n                `SWAG '
             '<https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_128gf_lc_swag-cbe8ce12.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=224,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_META,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 644812894,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 86.068,
                    "acc@5": 97.844,
                },
            },
            "_ops": 127.518,
            "_file_size": 2461.564,
            "_docs": ('\n                These weights are composed of the original frozen `SWAG'
             ' <https://arxiv.org/abs/2201.08371>`_ trunk\n                weights and '
             'a linear classifier learnt on top of them trained on ImageNet-1K data.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


class RegNet_Y_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_16gf-9e6ed7dd.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 83590140,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#la'
             'rge-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.424,
                    "acc@5": 95.24,
                },
            },
            "_ops": 15.912,
            "_file_size": 319.49,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_16gf-3e4a00f9.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 83590140,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 82.886,
                    "acc@5": 96.328,
                },
            },
            "_ops": 15.912,
            "_file_size": 319.49,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_16gf_swag-43afe44d.pth",
        transforms=partial(
            ImageClassification, crop_size=384,
            resize_size=384,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_META,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 83590140,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 86.012,
                    "acc@5": 98.054,
                },
            },
            "_ops": 46.735,
            "_file_size": 319.49,
            "_docs": ('\n                These weights are learnt via transfer learning by '
             'end-to-end fine-tuning the original\n                `SWAG '
             '<https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_16gf_lc_swag-f3ec0043.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=224,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_META,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 83590140,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.976,
                    "acc@5": 97.244,
                },
            },
            "_ops": 15.912,
            "_file_size": 319.49,
            "_docs": ('\n                These weights are composed of the original frozen `SWAG'
             ' <https://arxiv.org/abs/2201.08371>`_ trunk\n                weights and '
             'a linear classifier learnt on top of them trained on ImageNet-1K data.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_1_6gf-b11a554e.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 11202430,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sm'
             'all-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 77.95,
                    "acc@5": 93.966,
                },
            },
            "_ops": 1.612,
            "_file_size": 43.152,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_1_6gf-0d7bc02a.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 11202430,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.876,
                    "acc@5": 95.444,
                },
            },
            "_ops": 1.612,
            "_file_size": 43.152,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_32gf-4dee3f7a.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 145046770,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#la'
             'rge-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.878,
                    "acc@5": 95.34,
                },
            },
            "_ops": 32.28,
            "_file_size": 554.076,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_32gf-8db6d4b5.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 145046770,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.368,
                    "acc@5": 96.498,
                },
            },
            "_ops": 32.28,
            "_file_size": 554.076,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_32gf_swag-04fdfa75.pth",
        transforms=partial(
            ImageClassification, crop_size=384,
            resize_size=384,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_META,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 145046770,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 86.838,
                    "acc@5": 98.362,
                },
            },
            "_ops": 94.826,
            "_file_size": 554.076,
            "_docs": ('\n                These weights are learnt via transfer learning by '
             'end-to-end fine-tuning the original\n                `SWAG '
             '<https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_32gf_lc_swag-e1583746.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=224,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_META,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 145046770,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 84.622,
                    "acc@5": 97.48,
                },
            },
            "_ops": 32.28,
            "_file_size": 554.076,
            "_docs": ('\n                These weights are composed of the original frozen `SWAG'
             ' <https://arxiv.org/abs/2201.08371>`_ trunk\n                weights and '
             'a linear classifier learnt on top of them trained on ImageNet-1K data.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_3_2gf-b5a9779c.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 19436338,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#me'
             'dium-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 78.948,
                    "acc@5": 94.576,
                },
            },
            "_ops": 3.176,
            "_file_size": 74.567,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_3_2gf-9180c971.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 19436338,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.982,
                    "acc@5": 95.972,
                },
            },
            "_ops": 3.176,
            "_file_size": 74.567,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_400mf-c65dace8.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 4344144,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sm'
             'all-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 74.046,
                    "acc@5": 91.716,
                },
            },
            "_ops": 0.402,
            "_file_size": 16.806,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_400mf-e6988f5f.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 4344144,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 75.804,
                    "acc@5": 92.742,
                },
            },
            "_ops": 0.402,
            "_file_size": 16.806,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_800mf-1b27b58c.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 6432512,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sm'
             'all-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 76.42,
                    "acc@5": 93.136,
                },
            },
            "_ops": 0.834,
            "_file_size": 24.774,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_800mf-58fc7688.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 6432512,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 78.828,
                    "acc@5": 94.502,
                },
            },
            "_ops": 0.834,
            "_file_size": 24.774,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_8gf-d0d0e4a8.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 39381472,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#me'
             'dium-models'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.032,
                    "acc@5": 95.048,
                },
            },
            "_ops": 8.473,
            "_file_size": 150.701,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_8gf-dc2b1b54.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 39381472,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 82.828,
                    "acc@5": 96.33,
                },
            },
            "_ops": 8.473,
            "_file_size": 150.701,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_400MF_Weights.IMAGENET1K_V1))
def regnet_y_400mf(*, weights: Optional[RegNet_Y_400MF_Weights] = None, progress=True, **kwargs):
    """RegNetY-400MF. ``weights``: a ``RegNet_Y_400MF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_400MF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_800MF_Weights.IMAGENET1K_V1))
def regnet_y_800mf(*, weights: Optional[RegNet_Y_800MF_Weights] = None, progress=True, **kwargs):
    """RegNetY-800MF. ``weights``: a ``RegNet_Y_800MF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_800MF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=14, w_0=56, w_a=38.84, w_m=2.4, group_width=16, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_1_6GF_Weights.IMAGENET1K_V1))
def regnet_y_1_6gf(*, weights: Optional[RegNet_Y_1_6GF_Weights] = None, progress=True, **kwargs):
    """RegNetY-1.6GF. ``weights``: a ``RegNet_Y_1_6GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_1_6GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=27, w_0=48, w_a=20.71, w_m=2.65, group_width=24, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_3_2GF_Weights.IMAGENET1K_V1))
def regnet_y_3_2gf(*, weights: Optional[RegNet_Y_3_2GF_Weights] = None, progress=True, **kwargs):
    """RegNetY-3.2GF. ``weights``: a ``RegNet_Y_3_2GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_3_2GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=21, w_0=80, w_a=42.63, w_m=2.66, group_width=24, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_8GF_Weights.IMAGENET1K_V1))
def regnet_y_8gf(*, weights: Optional[RegNet_Y_8GF_Weights] = None, progress=True, **kwargs):
    """RegNetY-8GF. ``weights``: a ``RegNet_Y_8GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_8GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=17, w_0=192, w_a=76.82, w_m=2.19, group_width=56, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_16GF_Weights.IMAGENET1K_V1))
def regnet_y_16gf(*, weights: Optional[RegNet_Y_16GF_Weights] = None, progress=True, **kwargs):
    """RegNetY-16GF. ``weights``: a ``RegNet_Y_16GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_16GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=18, w_0=200, w_a=106.23, w_m=2.48, group_width=112, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_32GF_Weights.IMAGENET1K_V1))
def regnet_y_32gf(*, weights: Optional[RegNet_Y_32GF_Weights] = None, progress=True, **kwargs):
    """RegNetY-32GF. ``weights``: a ``RegNet_Y_32GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_32GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=20, w_0=232, w_a=115.89, w_m=2.53, group_width=232, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def regnet_y_128gf(*, weights: Optional[RegNet_Y_128GF_Weights] = None, progress=True, **kwargs):
    """RegNetY-128GF. ``weights``: a ``RegNet_Y_128GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_Y_128GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=27, w_0=456, w_a=160.83, w_m=2.52, group_width=264, se_ratio=0.25, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_X_400MF_Weights.IMAGENET1K_V1))
def regnet_x_400mf(*, weights: Optional[RegNet_X_400MF_Weights] = None, progress=True, **kwargs):
    """RegNetX-400MF. ``weights``: a ``RegNet_X_400MF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_X_400MF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=22, w_0=24, w_a=24.48, w_m=2.54, group_width=16, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_X_800MF_Weights.IMAGENET1K_V1))
def regnet_x_800mf(*, weights: Optional[RegNet_X_800MF_Weights] = None, progress=True, **kwargs):
    """RegNetX-800MF. ``weights``: a ``RegNet_X_800MF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_X_800MF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=16, w_0=56, w_a=35.73, w_m=2.28, group_width=16, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_X_1_6GF_Weights.IMAGENET1K_V1))
def regnet_x_1_6gf(*, weights: Optional[RegNet_X_1_6GF_Weights] = None, progress=True, **kwargs):
    """RegNetX-1.6GF. ``weights``: a ``RegNet_X_1_6GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_X_1_6GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=18, w_0=80, w_a=34.01, w_m=2.25, group_width=24, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_X_3_2GF_Weights.IMAGENET1K_V1))
def regnet_x_3_2gf(*, weights: Optional[RegNet_X_3_2GF_Weights] = None, progress=True, **kwargs):
    """RegNetX-3.2GF. ``weights``: a ``RegNet_X_3_2GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_X_3_2GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=25, w_0=88, w_a=26.31, w_m=2.25, group_width=48, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_X_8GF_Weights.IMAGENET1K_V1))
def regnet_x_8gf(*, weights: Optional[RegNet_X_8GF_Weights] = None, progress=True, **kwargs):
    """RegNetX-8GF. ``weights``: a ``RegNet_X_8GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_X_8GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=23, w_0=80, w_a=49.56, w_m=2.88, group_width=120, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_X_16GF_Weights.IMAGENET1K_V1))
def regnet_x_16gf(*, weights: Optional[RegNet_X_16GF_Weights] = None, progress=True, **kwargs):
    """RegNetX-16GF. ``weights``: a ``RegNet_X_16GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_X_16GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=22, w_0=216, w_a=55.59, w_m=2.1, group_width=128, **kwargs)
    return _regnet(params, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_X_32GF_Weights.IMAGENET1K_V1))
def regnet_x_32gf(*, weights: Optional[RegNet_X_32GF_Weights] = None, progress=True, **kwargs):
    """RegNetX-32GF. ``weights``: a ``RegNet_X_32GF_Weights`` member or None; ``progress``: a
    download progress bar; ``kwargs`` go to :class:`RegNet`."""
    weights = RegNet_X_32GF_Weights.verify(weights)
    params = BlockParams.from_init_params(
        depth=23, w_0=320, w_a=69.86, w_m=2.0, group_width=168, **kwargs)
    return _regnet(params, weights, progress, **kwargs)
