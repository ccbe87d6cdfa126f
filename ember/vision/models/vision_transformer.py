"""Vision Transformer (Dosovitskiy et al., 2020): the image cut into patches by a strided
convolution (``conv_proj``), a class token and learned position embeddings, a pre-norm
Transformer encoder, and a head on the class token."""
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
from ..ops.misc import Conv2dNormActivation, MLP

__all__ = ["VisionTransformer", "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_L_16_Weights",
           "ViT_L_32_Weights", "ViT_H_14_Weights", "vit_b_16", "vit_b_32", "vit_l_16",
           "vit_l_32", "vit_h_14"]


class ConvStemConfig:
    """One convolution of an optional convolutional stem (Xiao et al., 2021)."""

    def __init__(self, out_channels, kernel_size, stride, norm_layer=nn.BatchNorm2d,
                 activation_layer=nn.ReLU):
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.norm_layer = norm_layer
        self.activation_layer = activation_layer


class MLPBlock(MLP):
    """The encoder's feed-forward block: Linear → GELU → Dropout → Linear → Dropout."""
    _version = 2

    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None,
                         dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # Checkpoints from before version 2 named the two Linear layers linear_1 and linear_2.
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for i in range(2):
                for kind in ["weight", "bias"]:
                    old_key = f"{prefix}linear_{i + 1}.{kind}"
                    if old_key in state_dict:
                        state_dict[f"{prefix}{3 * i}.{kind}"] = state_dict.pop(old_key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class EncoderBlock(nn.Module):
    """Pre-norm self-attention and MLP, each with a residual connection."""

    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads,
                                                    dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError("Expected (batch_size, seq_length, hidden_dim) got "
                             f"{tuple(input.shape)}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Position embeddings, dropout, ``num_layers`` encoder blocks, a final LayerNorm."""

    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                 attention_dropout, norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.pos_embedding = nn.Parameter(
            ember.empty(1, seq_length, hidden_dim).normal_(std=0.02))  # from BERT
        self.dropout = nn.Dropout(dropout)
        layers = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout,
                                                        attention_dropout, norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError("Expected (batch_size, seq_length, hidden_dim) got "
                             f"{tuple(input.shape)}")
        input = input + self.pos_embedding
        return self.ln(self.layers(self.dropout(input)))


class VisionTransformer(nn.Module):
    """``image_size`` is fixed (the position embeddings have one entry per patch); a
    ``representation_size`` adds a Linear-Tanh ``pre_logits`` layer before the ``head``."""

    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim,
                 dropout=0.0, attention_dropout=0.0, num_classes=1000, representation_size=None,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), conv_stem_configs=None):
        super().__init__()
        if image_size % patch_size != 0:
            raise ValueError("Input shape indivisible by patch size!")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        if conv_stem_configs is not None:
            seq_proj = nn.Sequential()
            prev_channels = 3
            for i, cfg in enumerate(conv_stem_configs):
                seq_proj.add_module(f"conv_bn_relu_{i}", Conv2dNormActivation(
                    in_channels=prev_channels, out_channels=cfg.out_channels,
                    kernel_size=cfg.kernel_size, stride=cfg.stride, norm_layer=cfg.norm_layer,
                    activation_layer=cfg.activation_layer))
                prev_channels = cfg.out_channels
            seq_proj.add_module("conv_last", nn.Conv2d(prev_channels, hidden_dim, kernel_size=1))
            self.conv_proj = seq_proj
        else:
            self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        seq_length = (image_size // patch_size) ** 2
        self.class_token = nn.Parameter(ember.zeros(1, 1, hidden_dim))
        seq_length += 1
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                               attention_dropout, norm_layer)
        self.seq_length = seq_length
        heads_layers = OrderedDict()
        if representation_size is None:
            heads_layers["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads_layers["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads_layers["act"] = nn.Tanh()
            heads_layers["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads_layers)

        if isinstance(self.conv_proj, nn.Conv2d):
            fan_in = (self.conv_proj.in_channels * self.conv_proj.kernel_size[0]
                      * self.conv_proj.kernel_size[1])
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            if self.conv_proj.bias is not None:
                nn.init.zeros_(self.conv_proj.bias)
        elif isinstance(getattr(self.conv_proj, "conv_last", None), nn.Conv2d):
            nn.init.normal_(self.conv_proj.conv_last.weight, mean=0.0,
                            std=math.sqrt(2.0 / self.conv_proj.conv_last.out_channels))
            if self.conv_proj.conv_last.bias is not None:
                nn.init.zeros_(self.conv_proj.conv_last.bias)
        if hasattr(self.heads, "pre_logits") and isinstance(self.heads.pre_logits, nn.Linear):
            fan_in = self.heads.pre_logits.in_features
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.heads.pre_logits.bias)
        if isinstance(self.heads.head, nn.Linear):
            nn.init.zeros_(self.heads.head.weight)
            nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        n, c, h, w = x.shape
        p = self.patch_size
        if h != self.image_size:
            raise ValueError(f"Wrong image height! Expected {self.image_size} but got {h}!")
        if w != self.image_size:
            raise ValueError(f"Wrong image width! Expected {self.image_size} but got {w}!")
        n_h, n_w = h // p, w // p
        x = self.conv_proj(x)  # (n, hidden_dim, n_h, n_w)
        return x.reshape(n, self.hidden_dim, n_h * n_w).permute(0, 2, 1)

    def forward(self, x):
        x = self._process_input(x)
        batch_class_token = self.class_token.expand(x.shape[0], -1, -1)
        x = self.encoder(ember.cat([batch_class_token, x], dim=1))
        return self.heads(x[:, 0])


def _vision_transformer(patch_size, num_layers, num_heads, hidden_dim, mlp_dim, weights,
                        progress, **kwargs):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
        if weights.meta["min_size"][0] != weights.meta["min_size"][1]:
            raise ValueError(f"non-square min_size {weights.meta['min_size']} in the weights")
        _ovewrite_named_param(kwargs, "image_size", weights.meta["min_size"][0])
    image_size = kwargs.pop("image_size", 224)
    model = VisionTransformer(image_size=image_size, patch_size=patch_size,
                              num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
                              mlp_dim=mlp_dim, **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


class ViT_B_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vit_b_16-c867db91.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 86567656,
            "min_size": (224, 224),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#vi'
             't_b_16'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.072,
                    "acc@5": 95.318,
                },
            },
            "_ops": 17.564,
            "_file_size": 330.285,
            "_docs": ('\n                These weights were trained from scratch by using a '
             'modified version of `DeIT\n                '
             "<https://arxiv.org/abs/2012.12877>`_'s training recipe.\n            "),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url="https://download.pytorch.org/models/vit_b_16_swag-9ac1b537.pth",
        transforms=partial(
            ImageClassification, crop_size=384,
            resize_size=384,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 86859496,
            "min_size": (384, 384),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 85.304,
                    "acc@5": 97.65,
                },
            },
            "_ops": 55.484,
            "_file_size": 331.398,
            "_docs": ('\n                These weights are learnt via transfer learning by '
             'end-to-end fine-tuning the original\n                `SWAG '
             '<https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url="https://download.pytorch.org/models/vit_b_16_lc_swag-4e70ced5.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=224,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 86567656,
            "min_size": (224, 224),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.886,
                    "acc@5": 96.18,
                },
            },
            "_ops": 17.564,
            "_file_size": 330.285,
            "_docs": ('\n                These weights are composed of the original frozen `SWAG'
             ' <https://arxiv.org/abs/2201.08371>`_ trunk\n                weights and '
             'a linear classifier learnt on top of them trained on ImageNet-1K data.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_B_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vit_b_32-d86f8d99.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 88224232,
            "min_size": (224, 224),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#vi'
             't_b_32'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 75.912,
                    "acc@5": 92.466,
                },
            },
            "_ops": 4.409,
            "_file_size": 336.604,
            "_docs": ('\n                These weights were trained from scratch by using a '
             'modified version of `DeIT\n                '
             "<https://arxiv.org/abs/2012.12877>`_'s training recipe.\n            "),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_L_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vit_l_16-852ce7e3.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=242),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 304326632,
            "min_size": (224, 224),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#vi'
             't_l_16'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 79.662,
                    "acc@5": 94.638,
                },
            },
            "_ops": 61.555,
            "_file_size": 1161.023,
            "_docs": ('\n                These weights were trained from scratch by using a '
             "modified version of TorchVision's\n                `new training recipe"
             '\n                <https://pytorch.org/blog/how-to-train-state-of-the-art'
             '-models-using-torchvision-latest-primitives/>`_.\n            '),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url="https://download.pytorch.org/models/vit_l_16_swag-4f3808c9.pth",
        transforms=partial(
            ImageClassification, crop_size=512,
            resize_size=512,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 305174504,
            "min_size": (512, 512),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 88.064,
                    "acc@5": 98.512,
                },
            },
            "_ops": 361.986,
            "_file_size": 1164.258,
            "_docs": ('\n                These weights are learnt via transfer learning by '
             'end-to-end fine-tuning the original\n                `SWAG '
             '<https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url="https://download.pytorch.org/models/vit_l_16_lc_swag-4d563306.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=224,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 304326632,
            "min_size": (224, 224),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 85.146,
                    "acc@5": 97.422,
                },
            },
            "_ops": 61.555,
            "_file_size": 1161.023,
            "_docs": ('\n                These weights are composed of the original frozen `SWAG'
             ' <https://arxiv.org/abs/2201.08371>`_ trunk\n                weights and '
             'a linear classifier learnt on top of them trained on ImageNet-1K data.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_L_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vit_l_32-c7638314.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 306535400,
            "min_size": (224, 224),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#vi'
             't_l_32'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 76.972,
                    "acc@5": 93.07,
                },
            },
            "_ops": 15.378,
            "_file_size": 1169.449,
            "_docs": ('\n                These weights were trained from scratch by using a '
             'modified version of `DeIT\n                '
             "<https://arxiv.org/abs/2012.12877>`_'s training recipe.\n            "),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_H_14_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url="https://download.pytorch.org/models/vit_h_14_swag-80465313.pth",
        transforms=partial(
            ImageClassification, crop_size=518,
            resize_size=518,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 633470440,
            "min_size": (518, 518),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 88.552,
                    "acc@5": 98.694,
                },
            },
            "_ops": 1016.717,
            "_file_size": 2416.643,
            "_docs": ('\n                These weights are learnt via transfer learning by '
             'end-to-end fine-tuning the original\n                `SWAG '
             '<https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.'
             '\n            '),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url="https://download.pytorch.org/models/vit_h_14_lc_swag-c1eb923e.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=224,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "license": 'https://github.com/facebookresearch/SWAG/blob/main/LICENSE',
            "num_params": 632045800,
            "min_size": (224, 224),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 85.708,
                    "acc@5": 97.73,
                },
            },
            "_ops": 167.295,
            "_file_size": 2411.209,
            "_docs": ('\n                These weights are composed of the original frozen `SWAG'
             ' <https://arxiv.org/abs/2201.08371>`_ trunk\n                weights and '
             'a linear classifier learnt on top of them trained on ImageNet-1K data.'
             '\n            '),
        },
    )
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_B_16_Weights.IMAGENET1K_V1))
def vit_b_16(*, weights: Optional[ViT_B_16_Weights] = None, progress=True, **kwargs):
    """ViT-B_16 (12 layers, 12 heads, width 768). ``weights``: a ``ViT_B_16_Weights`` member or
    None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`VisionTransformer`."""
    weights = ViT_B_16_Weights.verify(weights)
    return _vision_transformer(patch_size=16, num_layers=12, num_heads=12, hidden_dim=768,
                               mlp_dim=3072, weights=weights, progress=progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_B_32_Weights.IMAGENET1K_V1))
def vit_b_32(*, weights: Optional[ViT_B_32_Weights] = None, progress=True, **kwargs):
    """ViT-B_32 (12 layers, 12 heads, width 768). ``weights``: a ``ViT_B_32_Weights`` member or
    None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`VisionTransformer`."""
    weights = ViT_B_32_Weights.verify(weights)
    return _vision_transformer(patch_size=32, num_layers=12, num_heads=12, hidden_dim=768,
                               mlp_dim=3072, weights=weights, progress=progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_L_16_Weights.IMAGENET1K_V1))
def vit_l_16(*, weights: Optional[ViT_L_16_Weights] = None, progress=True, **kwargs):
    """ViT-L_16 (24 layers, 16 heads, width 1024). ``weights``: a ``ViT_L_16_Weights`` member or
    None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`VisionTransformer`."""
    weights = ViT_L_16_Weights.verify(weights)
    return _vision_transformer(patch_size=16, num_layers=24, num_heads=16, hidden_dim=1024,
                               mlp_dim=4096, weights=weights, progress=progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_L_32_Weights.IMAGENET1K_V1))
def vit_l_32(*, weights: Optional[ViT_L_32_Weights] = None, progress=True, **kwargs):
    """ViT-L_32 (24 layers, 16 heads, width 1024). ``weights``: a ``ViT_L_32_Weights`` member or
    None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`VisionTransformer`."""
    weights = ViT_L_32_Weights.verify(weights)
    return _vision_transformer(patch_size=32, num_layers=24, num_heads=16, hidden_dim=1024,
                               mlp_dim=4096, weights=weights, progress=progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def vit_h_14(*, weights: Optional[ViT_H_14_Weights] = None, progress=True, **kwargs):
    """ViT-H_14 (32 layers, 16 heads, width 1280). ``weights``: a ``ViT_H_14_Weights`` member or
    None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`VisionTransformer`."""
    weights = ViT_H_14_Weights.verify(weights)
    return _vision_transformer(patch_size=14, num_layers=32, num_heads=16, hidden_dim=1280,
                               mlp_dim=5120, weights=weights, progress=progress, **kwargs)
