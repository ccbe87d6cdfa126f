"""RoI Align (He et al., Mask R-CNN): each region of interest is divided into an
``output_size`` grid of bins, each bin averages bilinear samples of the feature map on a
regular sub-grid, as torchvision's kernel.

Vectorised over all rois at once: the sample coordinates of every roi form ``(K, PH, Gy)`` and
``(K, PW, Gx)`` tensors (``G`` the largest sampling grid of any roi, smaller grids masked
out), the four bilinear neighbours are gathered with one advanced index into the channels-last
feature map, and the weighted sum is a product and a reduction. The gradient with respect to
the features is Ember's autograd through that index (a scatter-add), as exact as the kernel's
own backward; boxes get none, as in torchvision."""

import ember
from ember import nn

from ._utils import pair, rois_from


def _axis_samples(start, bin_size, grid, pooled, g_max, size):
    """Sample positions along one axis with their bilinear neighbours and weights:
    indices ``(K, P, G, 2)`` and weights ``(K, P, G, 2)`` (zero for masked samples)."""
    dev, dtype = start.device, start.dtype
    p = ember.arange(pooled, device=dev, dtype=dtype)[None, :, None]
    i = ember.arange(g_max, device=dev, dtype=dtype)[None, None, :]
    start, bin_size, grid_f = start[:, None, None], bin_size[:, None, None], grid[:, None, None]
    pos = start + p * bin_size + (i + 0.5) * bin_size / grid_f.clamp(min=1)
    valid = (i < grid_f) & (pos >= -1.0) & (pos <= size)
    pos = pos.clamp(min=0)
    low = pos.floor()
    at_edge = low >= size - 1
    low = ember.where(at_edge, ember.full_like(low, size - 1), low)
    high = ember.where(at_edge, low, low + 1)
    pos = ember.where(at_edge, low, pos)
    frac = pos - low
    weights = ember.stack((1 - frac, frac), dim=-1) * valid[..., None].to(dtype)
    index = ember.stack((low, high), dim=-1).long()
    return index, weights


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """RoI Align over ``input (N, C, H, W)`` for ``boxes`` (a ``(K, 5)`` tensor of
    ``(batch_index, x1, y1, x2, y2)`` or a list of per-image ``(K_i, 4)`` tensors) in input
    coordinates scaled by ``spatial_scale``. Returns ``(K, C, PH, PW)``. ``aligned=True``
    shifts the boxes by half a pixel so sample points align with pixel centres."""
    ph, pw = pair(output_size)
    rois = rois_from(boxes, input)
    n, c, h, w = input.shape
    k = rois.shape[0]
    if k == 0:
        return input.new_zeros((0, c, ph, pw))
    offset = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (rois[:, j] * spatial_scale - offset for j in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    if not aligned:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / ph, roi_w / pw
    if sampling_ratio > 0:
        grid_h = ember.full_like(roi_h, sampling_ratio)
        grid_w = ember.full_like(roi_w, sampling_ratio)
    else:
        grid_h, grid_w = ember.ceil(roi_h / ph), ember.ceil(roi_w / pw)
    gy_max = max(int(grid_h.max().item()), 1)
    gx_max = max(int(grid_w.max().item()), 1)
    count = (grid_h * grid_w).clamp(min=1)

    iy, wy = _axis_samples(y1, bin_h, grid_h, ph, gy_max, h)
    ix, wx = _axis_samples(x1, bin_w, grid_w, pw, gx_max, w)
    feat = input.permute(0, 2, 3, 1)
    b = rois[:, 0].long()
    sy, sx = gy_max * 2, gx_max * 2
    values = feat[b.reshape(k, 1, 1, 1, 1), iy.reshape(k, ph, sy, 1, 1),
                  ix.reshape(k, 1, 1, pw, sx)]                        # (K, PH, Sy, PW, Sx, C)
    weight = (wy.reshape(k, ph, sy, 1, 1) * wx.reshape(k, 1, 1, pw, sx)
              / count.reshape(k, 1, 1, 1, 1)).to(input.dtype)
    out = (values * weight[..., None]).sum(dim=(2, 4))                # (K, PH, PW, C)
    return out.permute(0, 3, 1, 2).contiguous()


class RoIAlign(nn.Module):
    """``roi_align`` as a module."""

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale,
                         self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned})")
