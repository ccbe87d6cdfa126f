"""Helpers the RoI ops share: the two forms torchvision accepts for boxes."""
import ember


def check_roi_boxes_shape(boxes):
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if not (isinstance(b, ember.Tensor) and b.dim() == 2 and b.shape[1] == 4):
                raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 4]")
    elif isinstance(boxes, ember.Tensor):
        if not (boxes.dim() == 2 and boxes.shape[1] == 5):
            raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    else:
        raise AssertionError("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def convert_boxes_to_roi_format(boxes):
    """A list of per-image ``(K_i, 4)`` boxes as one ``(K, 5)`` tensor whose first column is
    the image index."""
    concat_boxes = ember.cat(list(boxes), dim=0)
    ids = ember.cat([ember.full((len(b), 1), i, dtype=concat_boxes.dtype,
                                device=concat_boxes.device) for i, b in enumerate(boxes)], dim=0)
    return ember.cat([ids, concat_boxes], dim=1)


def rois_from(boxes, input):
    check_roi_boxes_shape(boxes)
    rois = boxes
    if not isinstance(rois, ember.Tensor):
        rois = convert_boxes_to_roi_format(rois)
    if rois.device != input.device:
        raise RuntimeError(f"Expected input and boxes on the same device, got {input.device} "
                           f"and {rois.device}")
    return rois.detach().to(input.dtype if input.is_floating_point() else ember.float32)


def pair(output_size):
    if isinstance(output_size, int):
        return output_size, output_size
    h, w = output_size
    return int(h), int(w)
