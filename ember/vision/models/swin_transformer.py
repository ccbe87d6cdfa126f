"""Swin Transformer (Liu et al., 2021): self-attention inside non-overlapping windows, the
windows shifted by half a window in every other block so information crosses them, and patch
merging between stages. Inputs need not be multiples of the window size: feature maps are
padded to whole windows (and shifting is skipped where one window covers the map)."""
from functools import partial
from typing import Optional

import ember
from ember import nn

from ..transforms._presets import ImageClassification, InterpolationMode  # noqa: F401
from ._api import register_model, Weights, WeightsEnum
from ._imagenet_categories import _IMAGENET_CATEGORIES
from ._legacy_interface import _load_weights, _ovewrite_named_param, handle_legacy_interface
from ..ops.misc import MLP, Permute
from ..ops.stochastic_depth import StochasticDepth

__all__ = ["SwinTransformer", "Swin_T_Weights", "Swin_S_Weights", "Swin_B_Weights", "swin_t",
           "swin_s", "swin_b"]

F = nn.functional


def _patch_merging_pad(x):
    """Concatenate each 2x2 neighbourhood's features (NHWC), padding odd sizes by one."""
    H, W, _ = x.shape[-3:]
    x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))
    x0 = x[..., 0::2, 0::2, :]
    x1 = x[..., 1::2, 0::2, :]
    x2 = x[..., 0::2, 1::2, :]
    x3 = x[..., 1::2, 1::2, :]
    return ember.cat([x0, x1, x2, x3], -1)


class PatchMerging(nn.Module):
    """Halve the resolution and double the width: 2x2 neighbourhoods concatenated, normalised,
    and projected by ``reduction`` (4C → 2C)."""

    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        return self.reduction(self.norm(_patch_merging_pad(x)))


def _get_relative_position_bias(relative_position_bias_table, relative_position_index,
                                window_size):
    n = window_size[0] * window_size[1]
    bias = relative_position_bias_table[relative_position_index]
    return bias.view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)


def _shift_attention_mask(pad_h, pad_w, window_size, shift_size, num_windows, like):
    """-100 where a query and key of one shifted window came from different image regions
    (the roll wrapped them around), 0 elsewhere: (num_windows, N, N)."""
    mask = like.new_zeros((pad_h, pad_w))
    h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
    w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
    region = 0
    for h in h_slices:
        for w in w_slices:
            mask[h[0]:h[1], w[0]:w[1]] = region
            region += 1
    mask = mask.view(pad_h // window_size[0], window_size[0], pad_w // window_size[1],
                     window_size[1])
    mask = mask.permute(0, 2, 1, 3).reshape(num_windows, window_size[0] * window_size[1])
    mask = mask.unsqueeze(1) - mask.unsqueeze(2)
    return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)


def shifted_window_attention(input, qkv_weight, proj_weight, relative_position_bias,
                             window_size, num_heads, shift_size, attention_dropout=0.0,
                             dropout=0.0, qkv_bias=None, proj_bias=None, logit_scale=None,
                             training=True):
    """Multi-head self-attention within (shifted) windows of an NHWC ``input``; all windows of
    the batch are one batched matrix product."""
    if logit_scale is not None:
        raise NotImplementedError("ember.vision implements Swin V1's windowed attention; the "
                                  "cosine attention of Swin V2 (logit_scale) is not implemented")
    B, H, W, C = input.shape
    pad_r = (window_size[1] - W % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - H % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_H, pad_W, _ = x.shape
    shift_size = list(shift_size)
    # One window covering the whole map: a shift would only wrap the map onto itself.
    if window_size[0] >= pad_H:
        shift_size[0] = 0
    if window_size[1] >= pad_W:
        shift_size[1] = 0
    shifted = sum(shift_size) > 0
    if shifted:
        x = ember.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    num_windows = (pad_H // window_size[0]) * (pad_W // window_size[1])
    x = x.view(B, pad_H // window_size[0], window_size[0], pad_W // window_size[1],
               window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(B * num_windows, window_size[0] * window_size[1], C)

    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    q = q * (C // num_heads) ** -0.5
    attn = q.matmul(k.transpose(-2, -1)) + relative_position_bias
    if shifted:
        attn_mask = _shift_attention_mask(pad_H, pad_W, window_size, shift_size, num_windows, x)
        attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
        attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.size(1), x.size(1))
    attn = F.dropout(F.softmax(attn, dim=-1), p=attention_dropout, training=training)

    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), C)
    x = F.dropout(F.linear(x, proj_weight, proj_bias), p=dropout, training=training)
    x = x.view(B, pad_H // window_size[0], pad_W // window_size[1], window_size[0],
               window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(B, pad_H, pad_W, C)
    if shifted:
        x = ember.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :H, :W, :].contiguous()


class ShiftedWindowAttention(nn.Module):
    """Windowed attention with a learned bias per relative position (``relative_position_
    bias_table``, indexed by the ``relative_position_index`` buffer)."""

    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size = window_size
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self):
        self.relative_position_bias_table = nn.Parameter(ember.zeros(
            (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1), self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self):
        coords = ember.stack(ember.meshgrid(ember.arange(self.window_size[0]),
                                            ember.arange(self.window_size[1]), indexing="ij"))
        coords_flatten = ember.flatten(coords, 1)  # 2, Wh*Ww
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()  # Wh*Ww, Wh*Ww, 2
        rows = (relative_coords[:, :, 0] + self.window_size[0] - 1) * (2 * self.window_size[1] - 1)
        cols = relative_coords[:, :, 1] + self.window_size[1] - 1
        self.register_buffer("relative_position_index", (rows + cols).flatten())

    def get_relative_position_bias(self):
        return _get_relative_position_bias(self.relative_position_bias_table,
                                           self.relative_position_index, self.window_size)

    def forward(self, x):
        return shifted_window_attention(
            x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(),
            self.window_size, self.num_heads, shift_size=self.shift_size,
            attention_dropout=self.attention_dropout, dropout=self.dropout,
            qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, training=self.training)


class SwinTransformerBlock(nn.Module):
    """Pre-norm windowed attention and MLP, each residual through stochastic depth."""

    def __init__(self, dim, num_heads, window_size, shift_size, mlp_ratio=4.0, dropout=0.0,
                 attention_dropout=0.0, stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm,
                 attn_layer=ShiftedWindowAttention):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(dim, window_size, shift_size, num_heads,
                               attention_dropout=attention_dropout, dropout=dropout)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None,
                       dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x):
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformer(nn.Module):
    """Patch embedding (a ``patch_size`` convolution, NHWC, norm), stages of ``depths[i]``
    blocks of width ``embed_dim * 2**i`` with patch merging between them, then norm, pooling
    and ``head``. Block ``j`` of ``N`` drops its branches with probability
    ``stochastic_depth_prob * j / (N - 1)``."""

    def __init__(self, patch_size, embed_dim, depths, num_heads, window_size, mlp_ratio=4.0,
                 dropout=0.0, attention_dropout=0.0, stochastic_depth_prob=0.1,
                 num_classes=1000, norm_layer=None, block=None, downsample_layer=PatchMerging):
        super().__init__()
        self.num_classes = num_classes
        block = SwinTransformerBlock if block is None else block
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-5)
        layers = [nn.Sequential(
            nn.Conv2d(3, embed_dim, kernel_size=(patch_size[0], patch_size[1]),
                      stride=(patch_size[0], patch_size[1])),
            Permute([0, 2, 3, 1]), norm_layer(embed_dim))]
        total_stage_blocks = sum(depths)
        stage_block_id = 0
        for i_stage in range(len(depths)):
            stage = []
            dim = embed_dim * 2 ** i_stage
            for i_layer in range(depths[i_stage]):
                sd_prob = stochastic_depth_prob * float(stage_block_id) / (total_stage_blocks - 1)
                stage.append(block(
                    dim, num_heads[i_stage], window_size=window_size,
                    shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                    mlp_ratio=mlp_ratio, dropout=dropout, attention_dropout=attention_dropout,
                    stochastic_depth_prob=sd_prob, norm_layer=norm_layer))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
            if i_stage < (len(depths) - 1):
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])  # NHWC -> NCHW
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.permute(self.norm(self.features(x)))
        return self.head(self.flatten(self.avgpool(x)))


def _swin_transformer(patch_size, embed_dim, depths, num_heads, window_size,
                      stochastic_depth_prob, weights, progress, **kwargs):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = SwinTransformer(patch_size=patch_size, embed_dim=embed_dim, depths=depths,
                            num_heads=num_heads, window_size=window_size,
                            stochastic_depth_prob=stochastic_depth_prob, **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


class Swin_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/swin_t-704ceda3.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=232,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 28288354,
            "min_size": (224, 224),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sw'
             'intransformer'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 81.474,
                    "acc@5": 95.776,
                },
            },
            "_ops": 4.491,
            "_file_size": 108.19,
            "_docs": ('These weights reproduce closely the results of the paper using a similar'
             ' training recipe.'),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Swin_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/swin_s-5e29d889.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=246,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 49606258,
            "min_size": (224, 224),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sw'
             'intransformer'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.196,
                    "acc@5": 96.36,
                },
            },
            "_ops": 8.741,
            "_file_size": 189.786,
            "_docs": ('These weights reproduce closely the results of the paper using a similar'
             ' training recipe.'),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Swin_B_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/swin_b-68c6b09e.pth",
        transforms=partial(
            ImageClassification, crop_size=224,
            resize_size=238,
            interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 87768224,
            "min_size": (224, 224),
            "recipe": ('https://github.com/pytorch/vision/tree/main/references/classification#sw'
             'intransformer'),
            "_metrics": {
                "ImageNet-1K": {
                    "acc@1": 83.582,
                    "acc@5": 96.64,
                },
            },
            "_ops": 15.431,
            "_file_size": 335.364,
            "_docs": ('These weights reproduce closely the results of the paper using a similar'
             ' training recipe.'),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", Swin_T_Weights.IMAGENET1K_V1))
def swin_t(*, weights: Optional[Swin_T_Weights] = None, progress=True, **kwargs):
    """Swin-T (embedding width 96, depths [2,2,6,2]). ``weights``: a ``Swin_T_Weights``
    member or None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`SwinTransformer`."""
    weights = Swin_T_Weights.verify(weights)
    return _swin_transformer(
        patch_size=[4, 4], embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24],
        window_size=[7, 7], stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", 0.2),
        weights=weights, progress=progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Swin_S_Weights.IMAGENET1K_V1))
def swin_s(*, weights: Optional[Swin_S_Weights] = None, progress=True, **kwargs):
    """Swin-S (embedding width 96, depths [2,2,18,2]). ``weights``: a ``Swin_S_Weights``
    member or None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`SwinTransformer`."""
    weights = Swin_S_Weights.verify(weights)
    return _swin_transformer(
        patch_size=[4, 4], embed_dim=96, depths=[2, 2, 18, 2], num_heads=[3, 6, 12, 24],
        window_size=[7, 7], stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", 0.3),
        weights=weights, progress=progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Swin_B_Weights.IMAGENET1K_V1))
def swin_b(*, weights: Optional[Swin_B_Weights] = None, progress=True, **kwargs):
    """Swin-B (embedding width 128, depths [2,2,18,2]). ``weights``: a ``Swin_B_Weights``
    member or None; ``progress``: a download progress bar; ``kwargs`` go to
    :class:`SwinTransformer`."""
    weights = Swin_B_Weights.verify(weights)
    return _swin_transformer(
        patch_size=[4, 4], embed_dim=128, depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32],
        window_size=[7, 7], stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", 0.5),
        weights=weights, progress=progress, **kwargs)
