"""Which fused module a sequence of module types becomes, as torch's ``fuser_method_mappings``.

``fuse_modules`` (eval) folds BatchNorm into the convolution or linear layer before it
(``nn.utils.fusion``); ``fuse_modules_qat`` keeps the BatchNorm inside a fused module so that
``prepare_qat`` can fold it while training.
"""
from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from ..nn import intrinsic as nni

__all__ = ["fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_convtranspose_bn",
           "get_fuser_method", "get_fuser_method_new"]


def _check_same_mode(*mods):
    if len({m.training for m in mods}) != 1:
        names = " and ".join(type(m).__name__ for m in mods)
        raise AssertionError(f"{names} must all be in the same mode (train or eval).")


def _check_bn_for_qat(bn, out, what):
    if bn.num_features != out:
        raise AssertionError(f"Output channel of {what} must match num_features of "
                             f"{type(bn).__name__}")
    if not bn.affine:
        raise AssertionError(f"Only support fusing {type(bn).__name__} with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError(f"Only support fusing {type(bn).__name__} with "
                             "tracking_running_stats set to True")


_CONV_BN = {nn.Conv1d: nni.ConvBn1d, nn.Conv2d: nni.ConvBn2d, nn.Conv3d: nni.ConvBn3d}
_CONV_BN_RELU = {nn.Conv1d: nni.ConvBnReLU1d, nn.Conv2d: nni.ConvBnReLU2d,
                 nn.Conv3d: nni.ConvBnReLU3d}
_CONV_RELU = {nn.Conv1d: nni.ConvReLU1d, nn.Conv2d: nni.ConvReLU2d, nn.Conv3d: nni.ConvReLU3d}


def fuse_conv_bn(is_qat, conv, bn):
    """Conv + BatchNorm: ``nni.ConvBnNd`` for QAT, else the conv with the BatchNorm folded in."""
    _check_same_mode(conv, bn)
    if is_qat:
        _check_bn_for_qat(bn, conv.out_channels, type(conv).__name__)
        fused_class = _CONV_BN.get(type(conv))
        if fused_class is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn)}")
        return fused_class(conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """Conv + BatchNorm + ReLU: ``nni.ConvBnReLUNd`` for QAT, else ``nni.ConvReLUNd`` of the
    folded conv."""
    _check_same_mode(conv, bn, relu)
    if is_qat:
        _check_bn_for_qat(bn, conv.out_channels, type(conv).__name__)
        fused_class = _CONV_BN_RELU.get(type(conv))
        if fused_class is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn, relu)}")
        return fused_class(conv, bn, relu)
    fused_class = _CONV_RELU.get(type(conv))
    if fused_class is None:
        raise NotImplementedError(f"Cannot fuse eval modules: {(conv, bn, relu)}")
    return fused_class(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    """Linear + BatchNorm1d: ``nni.LinearBn1d`` for QAT, else the folded linear layer."""
    _check_same_mode(linear, bn)
    if is_qat:
        _check_bn_for_qat(bn, linear.out_features, "Linear")
        return nni.LinearBn1d(linear, bn)
    return fuse_linear_bn_eval(linear, bn)


def fuse_convtranspose_bn(is_qat, convt, bn):
    """ConvTranspose + BatchNorm (eval only: torch has no QAT transposed ConvBn either)."""
    _check_same_mode(convt, bn)
    if is_qat:
        raise Exception("Fusing ConvTranspose+BatchNorm not yet supported in QAT.")
    return fuse_conv_bn_eval(convt, bn, transpose=True)


def _sequential_wrapper2(sequential):
    """A fuser method that puts two modules into the fused class ``sequential``."""
    def fuser_method(is_qat, m1, m2):
        return sequential(m1, m2)
    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (nn.Conv1d, nn.BatchNorm1d): fuse_conv_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv3d, nn.BatchNorm3d): fuse_conv_bn,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv1d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU1d),
    (nn.Conv2d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU2d),
    (nn.Conv3d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU3d),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _sequential_wrapper2(nni.LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _sequential_wrapper2(nni.BNReLU2d),
    (nn.BatchNorm3d, nn.ReLU): _sequential_wrapper2(nni.BNReLU3d),
    (nn.ConvTranspose1d, nn.BatchNorm1d): fuse_convtranspose_bn,
    (nn.ConvTranspose2d, nn.BatchNorm2d): fuse_convtranspose_bn,
    (nn.ConvTranspose3d, nn.BatchNorm3d): fuse_convtranspose_bn,
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The fuser method for the tuple of module types ``op_list`` (AssertionError if none)."""
    mapping = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    fuser_method = mapping.get(tuple(op_list))
    if fuser_method is None:
        raise AssertionError(f"did not find fuser method for: {op_list} ")
    return fuser_method


def get_fuser_method_new(op_pattern, fuser_method_mapping):
    """The fuser method for a pattern given in FX order (the last module first)."""
    fuser_method = fuser_method_mapping.get(op_pattern)
    if fuser_method is None:
        raise AssertionError(f"did not find fuser method for: {op_pattern} ")
    return fuser_method
