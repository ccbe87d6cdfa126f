"""RoI max pooling (Girshick, Fast R-CNN), as torchvision's kernel: box corners rounded to
the feature grid, each of the ``output_size`` bins the max over its integer pixel range
(an empty bin gives 0).

Vectorised over all rois: every bin's pixel range is padded to the largest bin, gathered with
one advanced index and reduced with one ``max``; padding positions read ``-inf``. The
gradient flows to each bin's arg-max pixel, as the kernel's backward."""
import ember
from ember import nn

from ._utils import pair, rois_from


def _round_half_away(x):
    # C++ round(), which the kernel uses: halves go away from zero, not to even.
    return ember.sign(x) * ember.floor(x.abs() + 0.5)


def _axis_bins(start, end, pooled, size):
    dev, dtype = start.device, start.dtype
    extent = (end - start + 1).clamp(min=1)
    bin_size = extent / pooled
    p = ember.arange(pooled, device=dev, dtype=dtype)[None, :]
    lo = (ember.floor(p * bin_size[:, None]) + start[:, None]).clamp(min=0, max=size)
    hi = (ember.ceil((p + 1) * bin_size[:, None]) + start[:, None]).clamp(min=0, max=size)
    return lo.long(), hi.long()


def roi_pool(input, boxes, output_size, spatial_scale=1.0):
    """Max-pool each box of ``boxes`` (``(K, 5)`` or a list of ``(K_i, 4)``) over
    ``input (N, C, H, W)`` to ``(K, C, PH, PW)``."""
    ph, pw = pair(output_size)
    rois = rois_from(boxes, input)
    n, c, h, w = input.shape
    k = rois.shape[0]
    if k == 0:
        return input.new_zeros((0, c, ph, pw))
    x1, y1, x2, y2 = (_round_half_away(rois[:, j] * spatial_scale) for j in range(1, 5))
    h_lo, h_hi = _axis_bins(y1, y2, ph, h)
    w_lo, w_hi = _axis_bins(x1, x2, pw, w)
    bh = max(int((h_hi - h_lo).max().item()), 1)
    bw = max(int((w_hi - w_lo).max().item()), 1)
    dev = input.device
    iy = h_lo[:, :, None] + ember.arange(bh, device=dev)[None, None, :]          # (K, PH, Bh)
    ix = w_lo[:, :, None] + ember.arange(bw, device=dev)[None, None, :]          # (K, PW, Bw)
    valid = ((iy < h_hi[:, :, None])[:, :, :, None, None]
             & (ix < w_hi[:, :, None])[:, None, None, :, :])                     # (K,PH,Bh,PW,Bw)
    feat = input.permute(0, 2, 3, 1)
    b = rois[:, 0].long()
    values = feat[b.reshape(k, 1, 1, 1, 1), iy.clamp(max=h - 1).reshape(k, ph, bh, 1, 1),
                  ix.clamp(max=w - 1).reshape(k, 1, 1, pw, bw)]                  # (..., C)
    values = ember.where(valid[..., None], values,
                         ember.full((), float("-inf"), dtype=input.dtype, device=dev))
    values = values.permute(0, 1, 3, 5, 2, 4).reshape(k, ph, pw, c, bh * bw)
    out = values.max(dim=-1).values
    empty = ((h_hi <= h_lo)[:, :, None] | (w_hi <= w_lo)[:, None, :])[..., None]
    out = ember.where(empty, ember.zeros((), dtype=input.dtype, device=dev), out)
    return out.permute(0, 3, 1, 2).contiguous()


class RoIPool(nn.Module):
    """``roi_pool`` as a module."""

    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self):
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale})")
