"""MobileNetV3 (Howard et al., 2019): inverted residuals with optional squeeze-and-excitation
(hard-sigmoid gated) and hard-swish activations; the Large and Small configurations."""
from functools import partial
from typing import Optional

import ember
from ember import nn

from ..transforms._presets import ImageClassification
from ._api import register_model, Weights, WeightsEnum
from ._imagenet_categories import _IMAGENET_CATEGORIES
from ._legacy_interface import _load_weights, _ovewrite_named_param, handle_legacy_interface
from ..ops.misc import Conv2dNormActivation, SqueezeExcitation as SElayer
from ._channel_rounding import _make_divisible

__all__ = ["MobileNetV3", "MobileNet_V3_Large_Weights", "MobileNet_V3_Small_Weights",
           "mobilenet_v3_large", "mobilenet_v3_small"]


class InvertedResidualConfig:
    """One block: kernel, expanded and output widths (scaled by ``width_mult``), whether it has
    squeeze-and-excitation, its activation (``"RE"`` ReLU, ``"HS"`` hard-swish), stride and
    dilation."""

    def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se,
                 activation, stride, dilation, width_mult):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels, width_mult):
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """Expand (1x1, if widths differ), depthwise ``kernel`` convolution, squeeze-and-excitation
    (if ``use_se``), linear projection; residual when the shape is unchanged."""

    def __init__(self, cnf, norm_layer, se_layer=partial(SElayer, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels,
                                               kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=activation_layer))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels,
                                           kernel_size=cnf.kernel, stride=stride,
                                           dilation=cnf.dilation, groups=cnf.expanded_channels,
                                           norm_layer=norm_layer,
                                           activation_layer=activation_layer))
        if cnf.use_se:
            squeeze_channels = _make_divisible(cnf.expanded_channels // 4, 8)
            layers.append(se_layer(cnf.expanded_channels, squeeze_channels))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = result + input
        return result


class MobileNetV3(nn.Module):
    """A hard-swish stem, the configured blocks, a 1x1 convolution to 6x the last block's
    width, pooling, and a two-layer classifier through ``last_channel``."""

    def __init__(self, inverted_residual_setting, last_channel, num_classes=1000, block=None,
                 norm_layer=None, dropout=0.2, **kwargs):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig]")
        block = InvertedResidual if block is None else block
        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        firstconv_output_channels = inverted_residual_setting[0].input_channels
        layers = [Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3, stride=2,
                                       norm_layer=norm_layer, activation_layer=nn.Hardswish)]
        layers += [block(cnf, norm_layer) for cnf in inverted_residual_setting]
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = 6 * lastconv_input_channels
        layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels,
                                           kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(lastconv_output_channels, last_channel), nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True), nn.Linear(last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def _forward_impl(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))

    def forward(self, x):
        return self._forward_impl(x)


def _mobilenet_v3_conf(arch, width_mult=1.0, reduced_tail=False, dilated=False, **kwargs):
    """The block table of ``arch``; ``reduced_tail`` halves the last stage's widths and
    ``dilated`` dilates it (both for segmentation backbones)."""
    rd = 2 if reduced_tail else 1
    dilation = 2 if dilated else 1
    bneck_conf = partial(InvertedResidualConfig, width_mult=width_mult)
    adjust_channels = partial(InvertedResidualConfig.adjust_channels, width_mult=width_mult)
    if arch == "mobilenet_v3_large":
        rows = [
            (16, 3, 16, 16, False, "RE", 1, 1),
            (16, 3, 64, 24, False, "RE", 2, 1),  # C1
            (24, 3, 72, 24, False, "RE", 1, 1),
            (24, 5, 72, 40, True, "RE", 2, 1),  # C2
            (40, 5, 120, 40, True, "RE", 1, 1),
            (40, 5, 120, 40, True, "RE", 1, 1),
            (40, 3, 240, 80, False, "HS", 2, 1),  # C3
            (80, 3, 200, 80, False, "HS", 1, 1),
            (80, 3, 184, 80, False, "HS", 1, 1),
            (80, 3, 184, 80, False, "HS", 1, 1),
            (80, 3, 480, 112, True, "HS", 1, 1),
            (112, 3, 672, 112, True, "HS", 1, 1),
            (112, 5, 672, 160 // rd, True, "HS", 2, dilation),  # C4
            (160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dilation),
            (160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dilation),
        ]
        last_channel = adjust_channels(1280 // rd)
    elif arch == "mobilenet_v3_small":
        rows = [
            (16, 3, 16, 16, True, "RE", 2, 1),  # C1
            (16, 3, 72, 24, False, "RE", 2, 1),  # C2
            (24, 3, 88, 24, False, "RE", 1, 1),
            (24, 5, 96, 40, True, "HS", 2, 1),  # C3
            (40, 5, 240, 40, True, "HS", 1, 1),
            (40, 5, 240, 40, True, "HS", 1, 1),
            (40, 5, 120, 48, True, "HS", 1, 1),
            (48, 5, 144, 48, True, "HS", 1, 1),
            (48, 5, 288, 96 // rd, True, "HS", 2, dilation),  # C4
            (96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dilation),
            (96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dilation),
        ]
        last_channel = adjust_channels(1024 // rd)
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return [bneck_conf(*row) for row in rows], last_channel


def _mobilenet_v3(inverted_residual_setting, last_channel, weights, progress, **kwargs):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = MobileNetV3(inverted_residual_setting, last_channel, **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


# What every checkpoint of this family shares, as torchvision keeps it.
_COMMON_META = {"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES}


class MobileNet_V3_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v3_large-8738ca79.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 5483032,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#mo'
             'bilenetv3-large--small'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 74.042,
                    "acc@5": 91.34,
                },
            },
            "_ops": 0.217,
            "_file_size": 21.114,
            "_docs": ('These weights were trained from scratch by using a simple training '
             'recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v3_large-5c1a4163.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 5483032,
            "recipe": ('https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 75.274,
                    "acc@5": 92.566,
                },
            },
            "_ops": 0.217,
            "_file_size": 21.107,
            "_docs": ('\n                These weights improve marginally upon the results of '
             'the original paper by using a modified version of\n                '
             "TorchVision's `new training recipe\n                <https://pytorch.org/"
             'blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primi'
             'tives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class MobileNet_V3_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v3_small-047dcff4.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 2542856,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#mo'
             'bilenetv3-large--small'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 67.668,
                    "acc@5": 87.402,
                },
            },
            "_ops": 0.057,
            "_file_size": 9.829,
            "_docs": ('\n                These weights improve upon the results of the original '
             'paper by using a simple training recipe.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V1

@register_model()
@handle_legacy_interface(weights=("pretrained", MobileNet_V3_Large_Weights.IMAGENET1K_V1))
def mobilenet_v3_large(*, weights: Optional[MobileNet_V3_Large_Weights] = None, progress=True,
                       **kwargs):
    """MobileNetV3-Large. ``weights``: a ``MobileNet_V3_Large_Weights`` member or None;
    ``progress``: a download progress bar; ``kwargs`` go to :class:`MobileNetV3` (and
    ``width_mult``, ``reduced_tail``, ``dilated`` to the block table)."""
    weights = MobileNet_V3_Large_Weights.verify(weights)
    setting, last_channel = _mobilenet_v3_conf("mobilenet_v3_large", **kwargs)
    return _mobilenet_v3(setting, last_channel, weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", MobileNet_V3_Small_Weights.IMAGENET1K_V1))
def mobilenet_v3_small(*, weights: Optional[MobileNet_V3_Small_Weights] = None, progress=True,
                       **kwargs):
    """MobileNetV3-Small (arguments as :func:`mobilenet_v3_large`)."""
    weights = MobileNet_V3_Small_Weights.verify(weights)
    setting, last_channel = _mobilenet_v3_conf("mobilenet_v3_small", **kwargs)
    return _mobilenet_v3(setting, last_channel, weights, progress, **kwargs)
