"""ResNet (He et al., 2015), ResNeXt (Xie et al., 2016) and Wide ResNet (Zagoruyko & Komodakis,
2016), with torchvision's layer names: ``conv1``, ``bn1``, ``layer1``…``layer4``, ``fc``.

The stride of a downsampling ``Bottleneck`` sits on its 3x3 convolution (``conv2``), as in
torchvision's "ResNet V1.5", which the checkpoints were trained with.
"""
from functools import partial
from typing import Optional

import ember
from ember import nn

from ..transforms._presets import ImageClassification
from ._api import register_model, Weights, WeightsEnum
from ._imagenet_categories import _IMAGENET_CATEGORIES
from ._legacy_interface import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["ResNet", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights",
           "ResNet101_Weights", "ResNet152_Weights", "ResNeXt50_32X4D_Weights",
           "ResNeXt101_32X8D_Weights", "ResNeXt101_64X4D_Weights", "Wide_ResNet50_2_Weights",
           "Wide_ResNet101_2_Weights", "resnet18", "resnet34", "resnet50", "resnet101",
           "resnet152", "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
           "wide_resnet50_2", "wide_resnet101_2"]


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution with padding (no bias: a norm layer follows)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                     groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution (no bias)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and the shortcut (ResNet-18/34)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped for ResNeXt, strided when downsampling), 1x1 expand by 4."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """The stem (7x7/2 convolution, 3x3/2 max pool), four stages of ``block``s (``layers[i]``
    of them, widths 64·2^i), global average pooling and the ``fc`` classifier.

    ``zero_init_residual`` zeroes each block's last BatchNorm scale so every block starts as
    the identity; ``replace_stride_with_dilation`` (three booleans, stages 2–4) trades a
    stage's stride for dilation, keeping resolution for dense prediction.
    """

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1,
                 width_per_group=64, replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        self._norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2, replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], 2, replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], 2, replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                         dilation=self.dilation, norm_layer=norm_layer) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def _forward_impl(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(ember.flatten(self.avgpool(x), 1))

    def forward(self, x):
        return self._forward_impl(x)


def _resnet(block, layers, weights, progress, **kwargs):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = ResNet(block, layers, **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


# What every checkpoint of this family shares, as torchvision keeps it.
_COMMON_META = {"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES}


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet18-f37072fd.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 11689512,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#re'
             'snet'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 69.758,
                    "acc@5": 89.078,
                },
            },
            "_ops": 1.814,
            "_file_size": 44.661,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet34-b627a593.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 21797672,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#re'
             'snet'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 73.314,
                    "acc@5": 91.42,
                },
            },
            "_ops": 3.664,
            "_file_size": 83.275,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet50-0676ba61.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 25557032,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#re'
             'snet'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 76.13,
                    "acc@5": 92.862,
                },
            },
            "_ops": 4.089,
            "_file_size": 97.781,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnet50-11ad3fa6.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 25557032,
            "recipe": ('https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 80.858,
                    "acc@5": 95.434,
                },
            },
            "_ops": 4.089,
            "_file_size": 97.79,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using TorchVision's `new training recipe\n                <https"
             '://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvisi'
             'on-latest-primitives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet101-63fe2227.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 44549160,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#re'
             'snet'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 77.374,
                    "acc@5": 93.546,
                },
            },
            "_ops": 7.801,
            "_file_size": 170.511,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnet101-cd907fc2.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 44549160,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.886,
                    "acc@5": 95.78,
                },
            },
            "_ops": 7.801,
            "_file_size": 170.53,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using TorchVision's `new training recipe\n                <https"
             '://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvisi'
             'on-latest-primitives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet152-394f9c45.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 60192808,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#re'
             'snet'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 78.312,
                    "acc@5": 94.046,
                },
            },
            "_ops": 11.514,
            "_file_size": 230.434,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnet152-f82ba261.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 60192808,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 82.284,
                    "acc@5": 96.002,
                },
            },
            "_ops": 11.514,
            "_file_size": 230.474,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using TorchVision's `new training recipe\n                <https"
             '://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvisi'
             'on-latest-primitives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt50_32X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnext50_32x4d-7cdf4587.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 25028904,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#re'
             'snext'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 77.618,
                    "acc@5": 93.698,
                },
            },
            "_ops": 4.23,
            "_file_size": 95.789,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnext50_32x4d-1a0047aa.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 25028904,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.198,
                    "acc@5": 95.34,
                },
            },
            "_ops": 4.23,
            "_file_size": 95.833,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using TorchVision's `new training recipe\n                <https"
             '://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvisi'
             'on-latest-primitives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_32X8D_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnext101_32x8d-8ba56ff5.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 88791336,
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#re'
             'snext'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 79.312,
                    "acc@5": 94.526,
                },
            },
            "_ops": 16.414,
            "_file_size": 339.586,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnext101_32x8d-110c445d.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 88791336,
            "recipe": ('https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 82.834,
                    "acc@5": 96.228,
                },
            },
            "_ops": 16.414,
            "_file_size": 339.673,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using TorchVision's `new training recipe\n                <https"
             '://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvisi'
             'on-latest-primitives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_64X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnext101_64x4d-173b62eb.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 83455272,
            "recipe": 'https://github.com/pytorch/vision/pull/5935',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.246,
                    "acc@5": 96.454,
                },
            },
            "_ops": 15.46,
            "_file_size": 319.318,
            "_docs": ('\n                These weights were trained from scratch by using '
             "TorchVision's `new training recipe\n                <https://pytorch.org/"
             'blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primi'
             'tives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Wide_ResNet50_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/wide_resnet50_2-95faca4d.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 68883240,
            "recipe": 'https://github.com/pytorch/vision/pull/912#issue-445437439',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 78.468,
                    "acc@5": 94.086,
                },
            },
            "_ops": 11.398,
            "_file_size": 131.82,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/wide_resnet50_2-9ba9bcbe.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 68883240,
            "recipe": ('https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.602,
                    "acc@5": 95.758,
                },
            },
            "_ops": 11.398,
            "_file_size": 263.124,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using TorchVision's `new training recipe\n                <https"
             '://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvisi'
             'on-latest-primitives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2


class Wide_ResNet101_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/wide_resnet101_2-32ee1156.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 126886696,
            "recipe": 'https://github.com/pytorch/vision/pull/912#issue-445437439',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 78.848,
                    "acc@5": 94.284,
                },
            },
            "_ops": 22.753,
            "_file_size": 242.896,
            "_docs": ('These weights reproduce closely the results of the paper using a simple '
             'training recipe.'),
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/wide_resnet101_2-d733dc28.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 126886696,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 82.51,
                    "acc@5": 96.02,
                },
            },
            "_ops": 22.753,
            "_file_size": 484.747,
            "_docs": ('\n                These weights improve upon the results of the original '
             "paper by using TorchVision's `new training recipe\n                <https"
             '://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvisi'
             'on-latest-primitives/>`_.\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V2

@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet18_Weights.IMAGENET1K_V1))
def resnet18(*, weights: Optional[ResNet18_Weights] = None, progress=True, **kwargs):
    """ResNet-18. ``weights``: a ``ResNet18_Weights`` member (None: random initialisation);
    ``progress``: a download progress bar; ``kwargs`` go to :class:`ResNet`."""
    weights = ResNet18_Weights.verify(weights)
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet34_Weights.IMAGENET1K_V1))
def resnet34(*, weights: Optional[ResNet34_Weights] = None, progress=True, **kwargs):
    """ResNet-34 (arguments as :func:`resnet18`)."""
    weights = ResNet34_Weights.verify(weights)
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet50_Weights.IMAGENET1K_V1))
def resnet50(*, weights: Optional[ResNet50_Weights] = None, progress=True, **kwargs):
    """ResNet-50 (arguments as :func:`resnet18`)."""
    weights = ResNet50_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet101_Weights.IMAGENET1K_V1))
def resnet101(*, weights: Optional[ResNet101_Weights] = None, progress=True, **kwargs):
    """ResNet-101 (arguments as :func:`resnet18`)."""
    weights = ResNet101_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet152_Weights.IMAGENET1K_V1))
def resnet152(*, weights: Optional[ResNet152_Weights] = None, progress=True, **kwargs):
    """ResNet-152 (arguments as :func:`resnet18`)."""
    weights = ResNet152_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 8, 36, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNeXt50_32X4D_Weights.IMAGENET1K_V1))
def resnext50_32x4d(*, weights: Optional[ResNeXt50_32X4D_Weights] = None, progress=True,
                    **kwargs):
    """ResNeXt-50 32x4d: 32 groups of width 4 in each 3x3 (arguments as :func:`resnet18`)."""
    weights = ResNeXt50_32X4D_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "groups", 32)
    _ovewrite_named_param(kwargs, "width_per_group", 4)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNeXt101_32X8D_Weights.IMAGENET1K_V1))
def resnext101_32x8d(*, weights: Optional[ResNeXt101_32X8D_Weights] = None, progress=True,
                     **kwargs):
    """ResNeXt-101 32x8d (arguments as :func:`resnet18`)."""
    weights = ResNeXt101_32X8D_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "groups", 32)
    _ovewrite_named_param(kwargs, "width_per_group", 8)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNeXt101_64X4D_Weights.IMAGENET1K_V1))
def resnext101_64x4d(*, weights: Optional[ResNeXt101_64X4D_Weights] = None, progress=True,
                     **kwargs):
    """ResNeXt-101 64x4d (arguments as :func:`resnet18`)."""
    weights = ResNeXt101_64X4D_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "groups", 64)
    _ovewrite_named_param(kwargs, "width_per_group", 4)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Wide_ResNet50_2_Weights.IMAGENET1K_V1))
def wide_resnet50_2(*, weights: Optional[Wide_ResNet50_2_Weights] = None, progress=True,
                    **kwargs):
    """Wide ResNet-50-2: ResNet-50 with twice the bottleneck width (arguments as
    :func:`resnet18`)."""
    weights = Wide_ResNet50_2_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "width_per_group", 64 * 2)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Wide_ResNet101_2_Weights.IMAGENET1K_V1))
def wide_resnet101_2(*, weights: Optional[Wide_ResNet101_2_Weights] = None, progress=True,
                     **kwargs):
    """Wide ResNet-101-2 (arguments as :func:`resnet18`)."""
    weights = Wide_ResNet101_2_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "width_per_group", 64 * 2)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)
