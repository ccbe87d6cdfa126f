"""The tensor kernels behind ``transforms.functional``: images are ``(..., C, H, W)`` Ember
tensors, integer images span ``[0, dtype max]`` and float images ``[0, 1]``, as torchvision.

Every kernel is whole-array Ember ops (interpolation, grid sampling, convolution, indexing),
so it runs on any device Ember has and batches of images cost one call. Where torchvision
computes in float and casts back, the same casts happen here (rounding before the cast to an
integer type), so uint8 results agree with torchvision's."""

import ember
from ember.nn import functional as F

_INT_TYPES = None


def _int_types():
    global _INT_TYPES
    if _INT_TYPES is None:
        _INT_TYPES = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)
    return _INT_TYPES


def _is_tensor_a_torch_image(x):
    return x.ndim >= 2


def _assert_image_tensor(img):
    if not _is_tensor_a_torch_image(img):
        raise TypeError("Tensor is not a torch image.")


def get_dimensions(img):
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    height, width = img.shape[-2:]
    return [channels, height, width]


def get_image_size(img):
    _assert_image_tensor(img)
    return [img.shape[-1], img.shape[-2]]


def get_image_num_channels(img):
    return get_dimensions(img)[0]


def _max_value(dtype):
    if dtype.is_floating_point:
        return 1.0
    return ember.iinfo(dtype).max


def _assert_channels(img, permitted):
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but "
                        f"found {c}")


def convert_image_dtype(image, dtype=None):
    dtype = ember.float32 if dtype is None else dtype
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if ((image.dtype == ember.float32 and dtype in (ember.int32, ember.int64))
                or (image.dtype == ember.float64 and dtype == ember.int64)):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed "
                               f"safely.")
        # max + 1 - eps maps [0, 1] onto the integer range evenly; only 1.0 reaches the max.
        eps = 1e-3
        max_val = float(_max_value(dtype))
        return image.mul(max_val + 1.0 - eps).to(dtype)
    input_max = float(_max_value(image.dtype))
    if dtype.is_floating_point:
        return image.to(dtype) / input_max
    output_max = float(_max_value(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        image = ember.div(image, factor, rounding_mode="floor")
        return image.to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


def vflip(img):
    _assert_image_tensor(img)
    return img.flip(-2)


def hflip(img):
    _assert_image_tensor(img)
    return img.flip(-1)


def crop(img, top, left, height, width):
    _assert_image_tensor(img)
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        padding_ltrb = [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                        max(right - max(w, left), 0), max(bottom - max(h, top), 0)]
        return pad(img[..., max(top, 0):bottom, max(left, 0):right], padding_ltrb, fill=0)
    return img[..., top:bottom, left:right]


def _cast_squeeze_in(img, req_dtypes):
    need_squeeze = False
    if img.ndim < 4:
        img = img.unsqueeze(dim=0)
        need_squeeze = True
    out_dtype = img.dtype
    need_cast = False
    if out_dtype not in req_dtypes:
        need_cast = True
        img = img.to(req_dtypes[0])
    return img, need_cast, need_squeeze, out_dtype


def _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype):
    if need_squeeze:
        img = img.squeeze(dim=0)
    if need_cast:
        if out_dtype in _int_types():
            img = ember.round(img)
        img = img.to(out_dtype)
    return img


def _blend(img1, img2, ratio):
    ratio = float(ratio)
    bound = _max_value(img1.dtype)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def rgb_to_grayscale(img, num_output_channels=1):
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found "
                        f"{img.ndim}")
    _assert_channels(img, [1, 3])
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(dim=-3)
        l_img = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(dim=-3)
    else:
        l_img = img.clone()
    if num_output_channels == 3:
        return l_img.expand(img.shape)
    return l_img


def adjust_brightness(img, brightness_factor):
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    return _blend(img, ember.zeros_like(img), brightness_factor)


def adjust_contrast(img, contrast_factor):
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [3, 1])
    c = get_dimensions(img)[0]
    dtype = img.dtype if img.is_floating_point() else ember.float32
    gray = rgb_to_grayscale(img) if c == 3 else img
    mean = ember.mean(gray.to(dtype), dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


def adjust_saturation(img, saturation_factor):
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:
        return img
    return _blend(img, rgb_to_grayscale(img), saturation_factor)


def _rgb2hsv(img):
    r, g, b = img.unbind(dim=-3)
    maxc = ember.amax(img, dim=-3)
    minc = ember.amin(img, dim=-3)
    eqc = maxc == minc
    cr = maxc - minc
    ones = ember.ones_like(maxc)
    s = cr / ember.where(eqc, ones, maxc)
    cr_divisor = ember.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / cr_divisor, (maxc - g) / cr_divisor, (maxc - b) / cr_divisor
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = ember.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return ember.stack((h, s, maxc), dim=-3)


def _hsv2rgb(img):
    h, s, v = img.unbind(dim=-3)
    i = ember.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.to(ember.int32)
    p = ember.clamp(v * (1.0 - s), 0.0, 1.0)
    q = ember.clamp(v * (1.0 - s * f), 0.0, 1.0)
    t = ember.clamp(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    i = i % 6
    mask = i.unsqueeze(dim=-3) == ember.arange(6, device=i.device).view(-1, 1, 1)
    a1 = ember.stack((v, q, p, p, t, v), dim=-3)
    a2 = ember.stack((t, v, v, q, p, p), dim=-3)
    a3 = ember.stack((p, p, t, v, v, q), dim=-3)
    a4 = ember.stack((a1, a2, a3), dim=-4)
    return ember.einsum("...ijk, ...xijk -> ...xjk", mask.to(img.dtype), a4)


def adjust_hue(img, hue_factor):
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:
        return img
    orig_dtype = img.dtype
    img = convert_image_dtype(img, ember.float32)
    img = _rgb2hsv(img)
    h, s, v = img.unbind(dim=-3)
    h = (h + hue_factor) % 1.0
    out = _hsv2rgb(ember.stack((h, s, v), dim=-3))
    if orig_dtype != out.dtype:
        out = convert_image_dtype(out, orig_dtype)
    return out


def adjust_gamma(img, gamma, gain=1):
    _assert_channels(img, [1, 3])
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    dtype = img.dtype
    result = img if img.is_floating_point() else convert_image_dtype(img, ember.float32)
    result = (gain * result.pow(gamma)).clamp(0, 1)
    return convert_image_dtype(result, dtype)


def _pad_symmetric(img, padding):
    # Symmetric padding mirrors including the edge pixel: an index map built once per axis.
    in_sizes = img.shape
    left, right, top, bottom = padding
    dev = img.device

    def index(n, before, after):
        x = ember.arange(-before, n + after, device=dev)
        x = ember.where(x < 0, -x - 1, x)
        return ember.where(x >= n, 2 * n - 1 - x, x)

    x_idx = index(in_sizes[-1], max(left, 0), max(right, 0))
    y_idx = index(in_sizes[-2], max(top, 0), max(bottom, 0))
    out = img[..., y_idx[:, None], x_idx[None, :]]
    h, w = out.shape[-2:]
    return out[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]


def _parse_pad_padding(padding):
    if isinstance(padding, int):
        pad_left = pad_right = pad_top = pad_bottom = padding
    elif len(padding) == 1:
        pad_left = pad_right = pad_top = pad_bottom = padding[0]
    elif len(padding) == 2:
        pad_left = pad_right = padding[0]
        pad_top = pad_bottom = padding[1]
    else:
        pad_left, pad_top, pad_right, pad_bottom = padding[0], padding[1], padding[2], padding[3]
    return [pad_left, pad_right, pad_top, pad_bottom]


def pad(img, padding, fill=0, padding_mode="constant"):
    _assert_image_tensor(img)
    if fill is None:
        fill = 0
    if not isinstance(padding, (int, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if not isinstance(fill, (int, float)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, tuple):
        padding = list(padding)
    if isinstance(padding, list) and len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a "
                         f"{len(padding)} element tuple")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    p = _parse_pad_padding(padding)
    if padding_mode == "edge":
        padding_mode = "replicate"
    elif padding_mode == "symmetric":
        return _pad_symmetric(img, p)
    need_squeeze = False
    if img.ndim < 3:
        img = img.unsqueeze(dim=0)
        need_squeeze = True
    out_dtype = img.dtype
    need_cast = False
    if padding_mode != "constant" and not img.is_floating_point():
        need_cast = True
        img = img.to(ember.float32)
    if padding_mode in ("reflect", "replicate"):
        img = F.pad(img, p, mode=padding_mode)
    else:
        img = F.pad(img, p, mode=padding_mode, value=float(fill))
    if need_squeeze:
        img = img.squeeze(dim=0)
    if need_cast:
        img = img.to(out_dtype)
    return img


def resize(img, size, interpolation="bilinear", antialias=True):
    _assert_image_tensor(img)
    if isinstance(size, tuple):
        size = list(size)
    if antialias is None:
        antialias = False
    if antialias and interpolation not in ("bilinear", "bicubic"):
        antialias = False
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [ember.float32,
                                                                     ember.float64])
    align_corners = False if interpolation in ("bilinear", "bicubic") else None
    img = F.interpolate(img, size=size, mode=interpolation, align_corners=align_corners,
                        antialias=antialias)
    if interpolation == "bicubic" and out_dtype == ember.uint8:
        img = img.clamp(min=0, max=255)
    return _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)


def _assert_grid_transform_inputs(img, matrix, interpolation, fill, supported_interpolation_modes):
    if not isinstance(img, ember.Tensor):
        raise TypeError("Input img should be Tensor")
    _assert_image_tensor(img)
    if matrix is not None and not isinstance(matrix, list):
        raise TypeError("Argument matrix should be a list")
    if matrix is not None and len(matrix) != 6:
        raise ValueError("Argument matrix should have 6 float values")
    if isinstance(fill, (tuple, list)) and len(fill) > 1 and len(fill) != img.shape[-3]:
        raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number "
                         f"of channels of the image ({len(fill)} != {img.shape[-3]})")
    if interpolation not in supported_interpolation_modes:
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")


def _apply_grid_transform(img, grid, mode, fill):
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [grid.dtype])
    if img.shape[0] > 1:
        grid = grid.expand(img.shape[0], grid.shape[1], grid.shape[2], grid.shape[3])
    if fill is not None:
        mask = ember.ones((img.shape[0], 1, img.shape[2], img.shape[3]), dtype=img.dtype,
                          device=img.device)
        img = ember.cat((img, mask), dim=1)
    img = F.grid_sample(img, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        # The sampled ones channel says how much of each output pixel came from the image.
        mask = img[:, -1:, :, :]
        img = img[:, :-1, :, :]
        mask = mask.expand_as(img)
        fill_list = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = ember.tensor(fill_list, dtype=img.dtype, device=img.device).view(
            1, len(fill_list), 1, 1).expand_as(img)
        if mode == "nearest":
            img = ember.where(mask < 0.5, fill_img, img)
        else:
            img = img * mask + (1.0 - mask) * fill_img
    return _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)


def _gen_affine_grid(theta, w, h, ow, oh):
    # Output pixel centres in a frame centred on the image, mapped by theta and normalised
    # to grid_sample's [-1, 1] (align_corners=False) coordinates.
    d = 0.5
    dev, dtype = theta.device, theta.dtype
    x_grid = ember.linspace(-ow * 0.5 + d, ow * 0.5 + d - 1, steps=ow, device=dev, dtype=dtype)
    y_grid = ember.linspace(-oh * 0.5 + d, oh * 0.5 + d - 1, steps=oh, device=dev, dtype=dtype)
    base_grid = ember.stack((x_grid[None, :].expand(oh, ow), y_grid[:, None].expand(oh, ow),
                             ember.ones((oh, ow), device=dev, dtype=dtype)), dim=-1)
    rescaled_theta = theta.transpose(1, 2) / ember.tensor([0.5 * w, 0.5 * h], dtype=dtype,
                                                          device=dev)
    output_grid = base_grid.reshape(1, oh * ow, 3).bmm(rescaled_theta)
    return output_grid.view(1, oh, ow, 2)


def affine(img, matrix, interpolation="nearest", fill=None):
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    dtype = img.dtype if img.is_floating_point() else ember.float32
    theta = ember.tensor(matrix, dtype=dtype, device=img.device).reshape(1, 2, 3)
    shape = img.shape
    grid = _gen_affine_grid(theta, w=shape[-1], h=shape[-2], ow=shape[-1], oh=shape[-2])
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


def _compute_affine_output_size(matrix, w, h):
    # The corners of the input mapped by the forward matrix; a small tolerance keeps
    # float error from adding a pixel.
    pts = ember.tensor([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0],
                        [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]])
    theta = ember.tensor(matrix, dtype=ember.float32).view(2, 3)
    new_pts = ember.matmul(pts, theta.T)
    # Back to pixel coordinates before rounding outwards, so the rounding is on pixel edges.
    shift = ember.tensor((w * 0.5, h * 0.5))
    min_vals, max_vals = new_pts.amin(dim=0) + shift, new_pts.amax(dim=0) + shift
    tol = 1e-4
    cmax = ember.ceil((max_vals / tol).trunc() * tol)
    cmin = ember.floor((min_vals / tol).trunc() * tol)
    size = cmax - cmin
    return int(size[0].item()), int(size[1].item())


def rotate(img, matrix, interpolation="nearest", expand=False, fill=None):
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    w, h = img.shape[-1], img.shape[-2]
    ow, oh = _compute_affine_output_size(matrix, w, h) if expand else (w, h)
    dtype = img.dtype if img.is_floating_point() else ember.float32
    theta = ember.tensor(matrix, dtype=dtype, device=img.device).reshape(1, 2, 3)
    grid = _gen_affine_grid(theta, w=w, h=h, ow=ow, oh=oh)
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


def _perspective_grid(coeffs, ow, oh, dtype, device):
    theta1 = ember.tensor([[coeffs[0], coeffs[1], coeffs[2]], [coeffs[3], coeffs[4], coeffs[5]]],
                          dtype=dtype, device=device)
    theta2 = ember.tensor([[coeffs[6], coeffs[7], 1.0], [coeffs[6], coeffs[7], 1.0]],
                          dtype=dtype, device=device)
    d = 0.5
    x_grid = ember.linspace(d, ow * 1.0 + d - 1.0, steps=ow, device=device, dtype=dtype)
    y_grid = ember.linspace(d, oh * 1.0 + d - 1.0, steps=oh, device=device, dtype=dtype)
    base_grid = ember.stack((x_grid[None, :].expand(oh, ow), y_grid[:, None].expand(oh, ow),
                             ember.ones((oh, ow), device=device, dtype=dtype)), dim=-1)
    base = base_grid.reshape(1, oh * ow, 3)
    rescaled_theta1 = theta1.transpose(0, 1) / ember.tensor([0.5 * ow, 0.5 * oh], dtype=dtype,
                                                            device=device)
    output_grid1 = base.matmul(rescaled_theta1)
    output_grid2 = base.matmul(theta2.transpose(0, 1))
    output_grid = output_grid1 / output_grid2 - 1.0
    return output_grid.view(1, oh, ow, 2)


def perspective(img, perspective_coeffs, interpolation="bilinear", fill=None):
    _assert_grid_transform_inputs(img, None, interpolation, fill, ["nearest", "bilinear"])
    ow, oh = img.shape[-1], img.shape[-2]
    dtype = img.dtype if img.is_floating_point() else ember.float32
    grid = _perspective_grid(perspective_coeffs, ow=ow, oh=oh, dtype=dtype, device=img.device)
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


def elastic_transform(img, displacement, interpolation="bilinear", fill=None):
    h, w = img.shape[-2:]
    dev = img.device
    dtype = img.dtype if img.is_floating_point() else ember.float32
    # grid_sample's (align_corners=False) coordinates of the pixel centres, displaced.
    xs = ember.linspace((-w + 1) / w, (w - 1) / w, w, device=dev, dtype=dtype)
    ys = ember.linspace((-h + 1) / h, (h - 1) / h, h, device=dev, dtype=dtype)
    identity = ember.stack((xs[None, :].expand(h, w), ys[:, None].expand(h, w)), dim=-1)
    grid = identity[None] + displacement.to(device=dev, dtype=dtype)
    return _apply_grid_transform(img, grid, interpolation, fill)


def _get_gaussian_kernel1d(kernel_size, sigma, dtype, device):
    ksize_half = (kernel_size - 1) * 0.5
    x = ember.linspace(-ksize_half, ksize_half, steps=kernel_size, dtype=dtype, device=device)
    pdf = ember.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def _get_gaussian_kernel2d(kernel_size, sigma, dtype, device):
    kernel1d_x = _get_gaussian_kernel1d(kernel_size[0], sigma[0], dtype, device)
    kernel1d_y = _get_gaussian_kernel1d(kernel_size[1], sigma[1], dtype, device)
    return ember.mm(kernel1d_y[:, None], kernel1d_x[None, :])


def gaussian_blur(img, kernel_size, sigma):
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    _assert_image_tensor(img)
    dtype = img.dtype if img.is_floating_point() else ember.float32
    kernel = _get_gaussian_kernel2d(kernel_size, sigma, dtype=dtype, device=img.device)
    kernel = kernel.expand(img.shape[-3], 1, kernel.shape[0], kernel.shape[1])
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
    padding = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2,
               kernel_size[1] // 2]
    img = F.pad(img, padding, mode="reflect")
    img = F.conv2d(img, kernel, groups=img.shape[-3])
    return _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)


def invert(img):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found "
                        f"{img.ndim}")
    _assert_channels(img, [1, 3])
    return _max_value(img.dtype) - img


def posterize(img, bits):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found "
                        f"{img.ndim}")
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    mask = (0xFF << (8 - bits)) & 0xFF  # keeps the top `bits` bits
    return ember.bitwise_and(img, mask)


def solarize(img, threshold):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found "
                        f"{img.ndim}")
    _assert_channels(img, [1, 3])
    if threshold > _max_value(img.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    return ember.where(img >= threshold, invert(img), img)


def _blurred_degenerate_image(img):
    dtype = img.dtype if img.is_floating_point() else ember.float32
    kernel = ember.ones((3, 3), dtype=dtype, device=img.device)
    kernel[1, 1] = 5.0
    kernel = kernel / kernel.sum()
    kernel = kernel.expand(img.shape[-3], 1, kernel.shape[0], kernel.shape[1])
    result_tmp, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
    result_tmp = F.conv2d(result_tmp, kernel, groups=result_tmp.shape[-3])
    result_tmp = _cast_squeeze_out(result_tmp, need_cast, need_squeeze, out_dtype)
    result = img.clone()
    result[..., 1:-1, 1:-1] = result_tmp
    return result


def adjust_sharpness(img, sharpness_factor):
    if sharpness_factor < 0:
        raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _blurred_degenerate_image(img), sharpness_factor)


def autocontrast(img):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found "
                        f"{img.ndim}")
    _assert_channels(img, [1, 3])
    bound = _max_value(img.dtype)
    dtype = img.dtype if img.is_floating_point() else ember.float32
    minimum = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
    maximum = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
    scale = bound / (maximum - minimum)
    flat = ember.isfinite(scale).logical_not()
    minimum = ember.where(flat, ember.zeros_like(minimum), minimum)
    scale = ember.where(flat, ember.ones_like(scale), scale)
    return ((img - minimum) * scale).clamp(0, bound).to(img.dtype)


def equalize(img):
    _assert_image_tensor(img)
    if not 3 <= img.ndim <= 4:
        raise TypeError(f"Input image tensor should have 3 or 4 dimensions, but found "
                        f"{img.ndim}")
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    # Every channel of every image at once: one bincount over (channel, value) pairs gives
    # all histograms, and one gather applies each channel's lookup table.
    flat = img.reshape(-1, img.shape[-2] * img.shape[-1]).long()
    rows = flat.shape[0]
    offsets = (ember.arange(rows, device=img.device) * 256)[:, None]
    hist = ember.bincount((flat + offsets).reshape(-1), minlength=rows * 256).reshape(rows, 256)
    last = ember.gather(hist, 1, flat.amax(dim=1, keepdim=True))  # count of the top value
    step = ember.div(hist.sum(dim=1, keepdim=True) - last, 255, rounding_mode="floor")
    safe_step = ember.where(step == 0, ember.ones_like(step), step)
    lut = ember.div(ember.cumsum(hist, 1) + ember.div(step, 2, rounding_mode="floor"),
                    safe_step, rounding_mode="floor")
    lut = F.pad(lut, [1, 0])[:, :-1].clamp(0, 255)
    out = ember.where(step == 0, flat, ember.gather(lut, 1, flat))
    return out.to(ember.uint8).reshape(img.shape)


def normalize(tensor, mean, std, inplace=False):
    _assert_image_tensor(tensor)
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tensor.size()}")
    dtype, device = tensor.dtype, tensor.device
    mean = ember.as_tensor(mean, dtype=dtype, device=device)
    std = ember.as_tensor(std, dtype=dtype, device=device)
    if (std == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to "
                         f"division by zero.")
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(mean).div_(std)
    return (tensor - mean) / std


def erase(img, i, j, h, w, v, inplace=False):
    _assert_image_tensor(img)
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img
