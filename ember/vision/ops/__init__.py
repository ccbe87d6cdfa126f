"""``ember.vision.ops``, as ``torchvision.ops``: the layers torchvision's models are built from,
and the detection ops."""
from .misc import (Conv2dNormActivation, Conv3dNormActivation, FrozenBatchNorm2d, MLP, Permute,
                   SqueezeExcitation)
from .stochastic_depth import StochasticDepth, stochastic_depth
from .boxes import (batched_nms, box_area, box_convert, box_iou, clip_boxes_to_image,
                    complete_box_iou, distance_box_iou, generalized_box_iou, masks_to_boxes, nms,
                    remove_small_boxes)
from .roi_align import RoIAlign, roi_align
from .roi_pool import RoIPool, roi_pool
from .focal_loss import sigmoid_focal_loss
from .feature_pyramid_network import FeaturePyramidNetwork

__all__ = ["Conv2dNormActivation", "Conv3dNormActivation", "FrozenBatchNorm2d", "MLP", "Permute",
           "SqueezeExcitation", "StochasticDepth", "stochastic_depth",
           "batched_nms", "box_area", "box_convert", "box_iou", "clip_boxes_to_image",
           "complete_box_iou", "distance_box_iou", "generalized_box_iou", "masks_to_boxes", "nms",
           "remove_small_boxes", "RoIAlign", "roi_align", "RoIPool", "roi_pool",
           "sigmoid_focal_loss", "FeaturePyramidNetwork"]
