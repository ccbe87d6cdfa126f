"""EfficientNet B0–B7 (Tan & Le, 2019): MBConv blocks (inverted residuals with
squeeze-and-excitation and SiLU) whose widths and depths scale with the variant, stochastic
depth growing linearly along the network."""
import copy
import math
from functools import partial
from typing import Optional

import ember
from ember import nn

from ..transforms._presets import ImageClassification, InterpolationMode  # noqa: F401
from ._api import register_model, Weights, WeightsEnum
from ._imagenet_categories import _IMAGENET_CATEGORIES
from ._legacy_interface import _load_weights, _ovewrite_named_param, handle_legacy_interface
from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth
from ._channel_rounding import _make_divisible

__all__ = ["EfficientNet", "EfficientNet_B0_Weights", "EfficientNet_B1_Weights",
           "EfficientNet_B2_Weights", "EfficientNet_B3_Weights", "EfficientNet_B4_Weights",
           "EfficientNet_B5_Weights", "EfficientNet_B6_Weights", "EfficientNet_B7_Weights",
           "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3",
           "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7"]


class MBConvConfig:
    """One stage: expansion ratio, kernel, first stride, input/output widths (scaled by
    ``width_mult``, rounded to multiples of 8) and block count (scaled by ``depth_mult``,
    rounded up)."""

    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers,
                 width_mult=1.0, depth_mult=1.0, block=None):
        self.expand_ratio = expand_ratio
        self.kernel = kernel
        self.stride = stride
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.num_layers = self.adjust_depth(num_layers, depth_mult)
        self.block = MBConv if block is None else block

    @staticmethod
    def adjust_channels(channels, width_mult, min_value=None):
        return _make_divisible(channels * width_mult, 8, min_value)

    @staticmethod
    def adjust_depth(num_layers, depth_mult):
        return int(math.ceil(num_layers * depth_mult))


class MBConv(nn.Module):
    """1x1 expansion (unless the ratio is 1), depthwise ``kernel`` convolution,
    squeeze-and-excitation to a quarter of the input width, linear 1x1 projection; a residual
    through stochastic depth when the shape is unchanged."""

    def __init__(self, cnf, stochastic_depth_prob, norm_layer, se_layer=SqueezeExcitation):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        activation_layer = nn.SiLU
        expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        layers = []
        if expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels,
                                               kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=activation_layer))
        layers.append(Conv2dNormActivation(expanded_channels, expanded_channels,
                                           kernel_size=cnf.kernel, stride=cnf.stride,
                                           groups=expanded_channels, norm_layer=norm_layer,
                                           activation_layer=activation_layer))
        squeeze_channels = max(1, cnf.input_channels // 4)
        layers.append(se_layer(expanded_channels, squeeze_channels,
                               activation=partial(nn.SiLU, inplace=True)))
        layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class EfficientNet(nn.Module):
    """A 3x3/2 SiLU stem, the stages of ``inverted_residual_setting`` (block ``i`` of ``N``
    dropping its branch with probability ``stochastic_depth_prob * i / N``), a 1x1 convolution
    to ``last_channel`` (default 4x the last width), pooling, Dropout and ``Linear``."""

    def __init__(self, inverted_residual_setting, dropout, stochastic_depth_prob=0.2,
                 num_classes=1000, norm_layer=None, last_channel=None):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not all(isinstance(s, MBConvConfig) for s in inverted_residual_setting):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        firstconv_output_channels = inverted_residual_setting[0].input_channels
        layers = [Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3, stride=2,
                                       norm_layer=norm_layer, activation_layer=nn.SiLU)]
        total_stage_blocks = sum(cnf.num_layers for cnf in inverted_residual_setting)
        stage_block_id = 0
        for cnf in inverted_residual_setting:
            stage = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                if stage:  # only a stage's first block changes width and stride
                    block_cnf.input_channels = block_cnf.out_channels
                    block_cnf.stride = 1
                sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks
                stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = (last_channel if last_channel is not None
                                    else 4 * lastconv_input_channels)
        layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels,
                                           kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(lastconv_output_channels, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init_range = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -init_range, init_range)
                nn.init.zeros_(m.bias)

    def _forward_impl(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))

    def forward(self, x):
        return self._forward_impl(x)


def _efficientnet_conf(width_mult, depth_mult):
    bneck_conf = partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
    return [bneck_conf(1, 3, 1, 32, 16, 1), bneck_conf(6, 3, 2, 16, 24, 2),
            bneck_conf(6, 5, 2, 24, 40, 2), bneck_conf(6, 3, 2, 40, 80, 3),
            bneck_conf(6, 5, 1, 80, 112, 3), bneck_conf(6, 5, 2, 112, 192, 4),
            bneck_conf(6, 3, 1, 192, 320, 1)]


def _efficientnet(width_mult, depth_mult, dropout, weights, progress, **kwargs):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = EfficientNet(_efficientnet_conf(width_mult, depth_mult), kwargs.pop("dropout", dropout),
                         **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


class EfficientNet_B0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=256,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 5288548,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 77.692,
                    "acc@5": 93.532,
                },
            },
            "_ops": 0.386,
            "_file_size": 20.451,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B1_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b1_rwightman-bac287d4.pth",
        transforms=partial(
            ImageClassification, crop_size=240,
            resize_size=256,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 7794184,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 78.642,
                    "acc@5": 94.186,
                },
            },
            "_ops": 0.687,
            "_file_size": 30.134,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b1-c27df63c.pth",
        transforms=partial(
            ImageClassification, crop_size=240,
            resize_size=255,
            interpolation=InterpolationMode.BILINEAR),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/issues/3995#new-recipe-with-lr-wd-crop'
             '-tuning'),
            "num_params": 7794184,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 79.838,
                    "acc@5": 94.934,
                },
            },
            "_ops": 0.687,
            "_file_size": 30.136,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using a modified version of TorchVision's\n                `new "
             'training recipe\n                <https://pytorch.org/blog/how-to-train-s'
             'tate-of-the-art-models-using-torchvision-latest-primitives/>`_.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class EfficientNet_B2_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b2_rwightman-c35c1473.pth",
        transforms=partial(
            ImageClassification, crop_size=288,
            resize_size=288,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 9109994,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.608,
                    "acc@5": 95.31,
                },
            },
            "_ops": 1.088,
            "_file_size": 35.174,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B3_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b3_rwightman-b3899882.pth",
        transforms=partial(
            ImageClassification, crop_size=300,
            resize_size=320,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 12233232,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 82.008,
                    "acc@5": 96.054,
                },
            },
            "_ops": 1.827,
            "_file_size": 47.184,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B4_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b4_rwightman-23ab8bcd.pth",
        transforms=partial(
            ImageClassification, crop_size=380,
            resize_size=384,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 19341616,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.384,
                    "acc@5": 96.594,
                },
            },
            "_ops": 4.394,
            "_file_size": 74.489,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B5_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b5_lukemelas-1a07897c.pth",
        transforms=partial(
            ImageClassification, crop_size=456,
            resize_size=456,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 30389784,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.444,
                    "acc@5": 96.628,
                },
            },
            "_ops": 10.266,
            "_file_size": 116.864,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B6_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b6_lukemelas-24a108a5.pth",
        transforms=partial(
            ImageClassification, crop_size=528,
            resize_size=528,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 43040704,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 84.008,
                    "acc@5": 96.916,
                },
            },
            "_ops": 19.068,
            "_file_size": 165.362,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B7_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b7_lukemelas-c5b4e57e.pth",
        transforms=partial(
            ImageClassification, crop_size=600,
            resize_size=600,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#ef'
             'ficientnet-v1'),
            "num_params": 66347960,
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 84.122,
                    "acc@5": 96.908,
                },
            },
            "_ops": 37.746,
            "_file_size": 254.675,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B0_Weights.IMAGENET1K_V1))
def efficientnet_b0(*, weights: Optional[EfficientNet_B0_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B0 (width x1.0, depth x1.0, dropout 0.2). ``weights``: an
    ``EfficientNet_B0_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B0_Weights.verify(weights)
    return _efficientnet(1.0, 1.0, 0.2, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B1_Weights.IMAGENET1K_V1))
def efficientnet_b1(*, weights: Optional[EfficientNet_B1_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B1 (width x1.0, depth x1.1, dropout 0.2). ``weights``: an
    ``EfficientNet_B1_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B1_Weights.verify(weights)
    return _efficientnet(1.0, 1.1, 0.2, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B2_Weights.IMAGENET1K_V1))
def efficientnet_b2(*, weights: Optional[EfficientNet_B2_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B2 (width x1.1, depth x1.2, dropout 0.3). ``weights``: an
    ``EfficientNet_B2_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B2_Weights.verify(weights)
    return _efficientnet(1.1, 1.2, 0.3, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B3_Weights.IMAGENET1K_V1))
def efficientnet_b3(*, weights: Optional[EfficientNet_B3_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B3 (width x1.2, depth x1.4, dropout 0.3). ``weights``: an
    ``EfficientNet_B3_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B3_Weights.verify(weights)
    return _efficientnet(1.2, 1.4, 0.3, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B4_Weights.IMAGENET1K_V1))
def efficientnet_b4(*, weights: Optional[EfficientNet_B4_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B4 (width x1.4, depth x1.8, dropout 0.4). ``weights``: an
    ``EfficientNet_B4_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B4_Weights.verify(weights)
    return _efficientnet(1.4, 1.8, 0.4, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B5_Weights.IMAGENET1K_V1))
def efficientnet_b5(*, weights: Optional[EfficientNet_B5_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B5 (width x1.6, depth x2.2, dropout 0.4). ``weights``: an
    ``EfficientNet_B5_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B5_Weights.verify(weights)
    # The B5-B7 checkpoints were trained with TensorFlow's BatchNorm settings.
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=0.001, momentum=0.01))
    return _efficientnet(1.6, 2.2, 0.4, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B6_Weights.IMAGENET1K_V1))
def efficientnet_b6(*, weights: Optional[EfficientNet_B6_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B6 (width x1.8, depth x2.6, dropout 0.5). ``weights``: an
    ``EfficientNet_B6_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B6_Weights.verify(weights)
    # The B5-B7 checkpoints were trained with TensorFlow's BatchNorm settings.
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=0.001, momentum=0.01))
    return _efficientnet(1.8, 2.6, 0.5, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B7_Weights.IMAGENET1K_V1))
def efficientnet_b7(*, weights: Optional[EfficientNet_B7_Weights] = None, progress=True, **kwargs):
    """EfficientNet-B7 (width x2.0, depth x3.1, dropout 0.5). ``weights``: an
    ``EfficientNet_B7_Weights`` member or None; ``progress``: a download progress bar;
    ``kwargs`` go to :class:`EfficientNet`."""
    weights = EfficientNet_B7_Weights.verify(weights)
    # The B5-B7 checkpoints were trained with TensorFlow's BatchNorm settings.
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=0.001, momentum=0.01))
    return _efficientnet(2.0, 3.1, 0.5, weights, progress, **kwargs)
