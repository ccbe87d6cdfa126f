"""``ember.accelerator``, the ``ember.backends.*`` flag modules, ``finfo``/``iinfo`` and the
global precision/determinism/warning switches, each checked against torch 2.13 CPU."""
import contextlib
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.backends as eb
import torch.backends as tb
from ember.backends import unregister_backend
from torch_compare import compare_error


@contextlib.contextmanager
def _only_builtin_backends():
    """Unregister the suite's own devices ("testdev", and "cupyconf" where it is on), so the
    registry is what a user machine has; restored afterwards in its order."""
    from ember.backends import _FACTORIES
    saved = dict(_FACTORIES)
    for device_type in saved:
        if device_type not in ("cpu", "cuda"):
            unregister_backend(device_type)
    try:
        yield
    finally:
        _FACTORIES.clear()
        _FACTORIES.update(saved)


def _torch_fresh(code):
    """The value of the expression ``code`` printed by a fresh torch process: torch's
    float32-precision flags keep process-wide state that mixing its legacy and new APIs poisons
    for every later test."""
    import subprocess
    import sys
    program = "import torch, torch.backends as tb\n" + code
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True)
    return eval(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def restore_switches():
    """Put every global switch back as it was, in both libraries."""
    saved = (torch.get_float32_matmul_precision(), torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled(), torch.is_warn_always_enabled())
    ember_saved = (ember.get_float32_matmul_precision(), ember.get_deterministic_debug_mode(),
                   ember.is_warn_always_enabled())
    import ember._type_info_and_switches as sw
    chosen = sw._matmul_precision_chosen
    yield
    torch.set_float32_matmul_precision(saved[0])
    torch.use_deterministic_algorithms(saved[1], warn_only=saved[2])
    torch.set_warn_always(saved[3])
    ember.set_float32_matmul_precision(ember_saved[0])
    ember.set_deterministic_debug_mode(ember_saved[1])
    ember.set_warn_always(ember_saved[2])
    sw._matmul_precision_chosen = chosen


# ---- accelerator ----------------------------------------------------------------------------

def test_accelerator_surface_matches_torch():
    public = {n for n in dir(torch.accelerator) if not n.startswith("_")}
    wanted = {"current_accelerator", "current_device_idx", "current_device_index",
              "device_count", "device_index", "is_available", "set_device_idx",
              "set_device_index", "synchronize"}
    assert wanted <= public
    assert all(hasattr(ember.accelerator, n) for n in wanted)


def test_accelerator_without_one_answers_as_torch_cpu():
    with _only_builtin_backends():
        for check in (False, True):
            assert ember.accelerator.current_accelerator(check) == \
                torch.accelerator.current_accelerator(check_available=check)
        assert ember.accelerator.current_accelerator() is None
        assert ember.accelerator.is_available() is torch.accelerator.is_available() is False
        assert ember.accelerator.device_count() == torch.accelerator.device_count() == 0
        for call in (lambda m: m.accelerator.current_device_index(),
                     lambda m: m.accelerator.set_device_index(0),
                     lambda m: m.accelerator.synchronize(),
                     lambda m: m.accelerator.device_index(0).__enter__()):
            compare_error(call)
        with ember.accelerator.device_index(None), torch.accelerator.device_index(None):
            pass  # None switches nothing, in both
        with pytest.warns(FutureWarning, match="current_device_index"):
            with pytest.raises(RuntimeError, match="none is available"):
                ember.accelerator.current_device_idx()


def test_a_registered_backend_is_the_accelerator():
    # "testdev" plays the role of torch's PrivateUse1 device: a registered non-CPU backend.
    assert ember.accelerator.current_accelerator() == ember.device("testdev")
    assert ember.accelerator.current_accelerator(check_available=True) == ember.device("testdev")
    assert ember.accelerator.is_available() and ember.accelerator.device_count() == 1
    assert ember.accelerator.current_device_index() == 0
    with ember.accelerator.device_index(0):
        assert ember.accelerator.current_device_index() == 0
    ember.accelerator.synchronize()
    with pytest.raises(RuntimeError, match="Invalid device index 3"):
        ember.accelerator.set_device_index(3)
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        ember.accelerator.set_device_index("cpu")


# ---- backends ------------------------------------------------------------------------------

def test_backend_queries_answer_as_torch_cpu():
    assert eb.cudnn.is_available() is tb.cudnn.is_available() is False
    assert eb.cudnn.version() is tb.cudnn.version() is None
    assert eb.mps.is_available() is tb.mps.is_available() is False
    assert eb.mps.is_built() is tb.mps.is_built() is False
    assert eb.cuda.is_built() is tb.cuda.is_built() is False
    assert eb.cpu.get_cpu_capability() == tb.cpu.get_cpu_capability()
    compare_error(lambda m: m.backends.mps.is_macos13_or_newer())
    # Ember runs no oneDNN or OpenMP kernels of its own; MKL only if NumPy's BLAS is MKL.
    assert eb.mkldnn.is_available() is False and eb.openmp.is_available() is False
    assert eb.mkl.is_available() == ("mkl" in eb.mkl._blas_name().lower())
    assert (eb.mkl.VERBOSE_OFF, eb.mkl.VERBOSE_ON) == (tb.mkl.VERBOSE_OFF, tb.mkl.VERBOSE_ON)
    with eb.mkl.verbose(eb.mkl.VERBOSE_OFF), eb.mkldnn.verbose(eb.mkldnn.VERBOSE_OFF):
        pass
    with pytest.raises(RuntimeError, match="verbose"):
        with eb.mkldnn.verbose(eb.mkldnn.VERBOSE_ON):
            pass


def test_cpu_capability_honours_aten_cpu_capability(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    assert eb.cpu.get_cpu_capability() == "DEFAULT"


_FLAGS = [("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"),
          ("cudnn", "allow_tf32"), ("cudnn", "benchmark_limit"), ("cudnn", "fp32_precision"),
          ("cudnn", "depthwise_kernel"), ("mkldnn", "enabled"), ("mkldnn", "deterministic"),
          ("mkldnn", "allow_tf32"), ("mkldnn", "fp32_precision")]


@pytest.mark.parametrize("module,flag", _FLAGS)
def test_flag_defaults_match_torch(module, flag):
    assert getattr(getattr(eb, module), flag) == getattr(getattr(tb, module), flag)


def test_matmul_flag_defaults_match_torch(restore_switches):
    for flag in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation",
                 "allow_fp16_reduced_precision_reduction_split_k", "fp32_precision"):
        assert getattr(eb.cuda.matmul, flag) == getattr(tb.cuda.matmul, flag), flag
    for fn in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
               "cudnn_sdp_enabled", "fp16_bf16_reduction_math_sdp_allowed"):
        assert getattr(eb.cuda, fn)() == getattr(tb.cuda, fn)(), fn


@pytest.mark.parametrize("flag", ["benchmark", "deterministic", "enabled", "allow_tf32"])
def test_cudnn_bool_flags_set_and_validate_as_torch(flag):
    before = getattr(eb.cudnn, flag)
    try:
        setattr(eb.cudnn, flag, not before)
        assert getattr(eb.cudnn, flag) is (not before)
    finally:
        setattr(eb.cudnn, flag, before)
    compare_error(lambda m: setattr(m.backends.cudnn, flag, "yes"))


def test_cudnn_flags_context_manager_sets_and_restores():
    expected = _torch_fresh(
        "s = []\n"
        "with tb.cudnn.flags(enabled=False, deterministic=True, benchmark=True):\n"
        "    s.append((tb.cudnn.enabled, tb.cudnn.deterministic, tb.cudnn.benchmark,\n"
        "              tb.cudnn.allow_tf32, tb.cudnn.benchmark_limit))\n"
        "s.append((tb.cudnn.enabled, tb.cudnn.deterministic, tb.cudnn.benchmark,\n"
        "          tb.cudnn.allow_tf32, tb.cudnn.benchmark_limit))\n"
        "with tb.mkldnn.flags(enabled=False, deterministic=True):\n"
        "    s.append((tb.mkldnn.enabled, tb.mkldnn.deterministic))\n"
        "s.append((tb.mkldnn.enabled, tb.mkldnn.deterministic, tb.mkldnn.allow_tf32))\n"
        "print(s)")
    states = []
    with eb.cudnn.flags(enabled=False, deterministic=True, benchmark=True):
        states.append((eb.cudnn.enabled, eb.cudnn.deterministic, eb.cudnn.benchmark,
                       eb.cudnn.allow_tf32, eb.cudnn.benchmark_limit))
    states.append((eb.cudnn.enabled, eb.cudnn.deterministic, eb.cudnn.benchmark,
                   eb.cudnn.allow_tf32, eb.cudnn.benchmark_limit))
    with eb.mkldnn.flags(enabled=False, deterministic=True):
        states.append((eb.mkldnn.enabled, eb.mkldnn.deterministic))
    states.append((eb.mkldnn.enabled, eb.mkldnn.deterministic, eb.mkldnn.allow_tf32))
    assert states == expected


def test_matmul_flags_set_validate_and_share_state_with_float32_precision(restore_switches):
    # torch raises where its legacy and new precision APIs are mixed in one process; this
    # sequence stays within what it answers.
    program = (
        "m = tb.cuda.matmul\n"
        "s = []\n"
        "for p in ('high', 'medium', 'highest'):\n"
        "    torch.set_float32_matmul_precision(p)\n"
        "    s.append((m.allow_tf32, m.fp32_precision))\n"
        "for flag in (True, False):\n"
        "    m.allow_tf32 = flag\n"
        "    s.append((torch.get_float32_matmul_precision(), m.fp32_precision))\n"
        "m.allow_fp16_reduced_precision_reduction = False\n"
        "s.append(m.allow_fp16_reduced_precision_reduction)\n"
        "print(s)")
    expected = _torch_fresh(program)
    m = eb.cuda.matmul
    states = []
    for p in ("high", "medium", "highest"):
        ember.set_float32_matmul_precision(p)
        states.append((m.allow_tf32, m.fp32_precision))
    for flag in (True, False):
        m.allow_tf32 = flag
        states.append((ember.get_float32_matmul_precision(), m.fp32_precision))
    m.allow_fp16_reduced_precision_reduction = False
    states.append(m.allow_fp16_reduced_precision_reduction)
    m.allow_fp16_reduced_precision_reduction = True
    assert states == expected
    compare_error(lambda m: setattr(m.backends.cuda.matmul, "allow_tf32", "x"))
    compare_error(lambda m: setattr(m.backends.cuda.matmul,
                                    "allow_fp16_reduced_precision_reduction", "x"))
    compare_error(lambda m: setattr(m.backends.cuda.matmul,
                                    "allow_bf16_reduced_precision_reduction", (True, False)))
    compare_error(lambda m: setattr(m.backends.cuda.matmul, "no_such_flag", True))
    compare_error(lambda m: m.backends.cuda.matmul.no_such_flag)
    assert not hasattr(eb.cuda.matmul, "no_such_flag")
    with pytest.raises(RuntimeError, match="Unknown precision: bad"):
        m.fp32_precision = "bad"


def test_sdp_switches_and_deprecated_sdp_kernel():
    try:
        eb.cuda.enable_flash_sdp(False)
        assert eb.cuda.flash_sdp_enabled() is False
    finally:
        eb.cuda.enable_flash_sdp(True)
    compare_error(lambda m: m.backends.cuda.enable_math_sdp(1))
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        context = eb.cuda.sdp_kernel(enable_math=False)
    with context:
        assert eb.cuda.math_sdp_enabled() is False
    assert eb.cuda.math_sdp_enabled() is True


# ---- finfo / iinfo --------------------------------------------------------------------------

_FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
_INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", _FLOATS)
def test_finfo_fields_and_repr_match_torch(name):
    t, e = torch.finfo(getattr(torch, name)), ember.finfo(getattr(ember, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, field) == getattr(t, field), field
        assert type(getattr(e, field)) is type(getattr(t, field)), field
    assert repr(e) == repr(t) and str(e) == str(t)


@pytest.mark.parametrize("name", _INTS)
def test_iinfo_fields_and_repr_match_torch(name):
    t, e = torch.iinfo(getattr(torch, name)), ember.iinfo(getattr(ember, name))
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(e, field) == getattr(t, field) and type(getattr(e, field)) is \
            type(getattr(t, field)), field
    assert repr(e) == repr(t)


def test_finfo_default_equality_and_errors_match_torch():
    assert repr(ember.finfo()) == repr(torch.finfo())
    assert ember.finfo(ember.float32) == ember.finfo(ember.float32) != ember.finfo(ember.float64)
    assert ember.iinfo(type=ember.int8).max == torch.iinfo(type=torch.int8).max
    with pytest.raises(TypeError, match="unhashable"):
        hash(ember.finfo(ember.float32))
    for call in (lambda m: m.finfo(m.int32), lambda m: m.finfo(m.bool),
                 lambda m: m.iinfo(m.float32), lambda m: m.iinfo(m.bool), lambda m: m.iinfo(),
                 lambda m: m.finfo(dtype=m.float16)):
        compare_error(call)
    for call in (lambda m: m.finfo("float32"), lambda m: m.finfo(None)):
        compare_error(call, gist="argument 'type' (position 1) must be")


# ---- global switches ------------------------------------------------------------------------

def test_float32_matmul_precision_validated_as_torch(restore_switches):
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    for value in ("high", "medium", "highest"):
        ember.set_float32_matmul_precision(value)
        torch.set_float32_matmul_precision(value)
        assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    ember.set_float32_matmul_precision("medium")
    with pytest.warns(UserWarning, match="low is not one of 'highest', 'high', or 'medium'"):
        ember.set_float32_matmul_precision("low")
    assert ember.get_float32_matmul_precision() == "medium"
    compare_error(lambda m: m.set_float32_matmul_precision(1))


def test_deterministic_switches_match_torch(restore_switches):
    def states(m):
        return (m.are_deterministic_algorithms_enabled(),
                m.is_deterministic_algorithms_warn_only_enabled(),
                m.get_deterministic_debug_mode())
    assert states(ember) == states(torch)
    for lib in (torch, ember):
        lib.use_deterministic_algorithms(True, warn_only=True)
    assert states(ember) == states(torch) == (True, True, 1)
    for mode in ("error", 0, "warn", 2, "default"):
        torch.set_deterministic_debug_mode(mode)
        ember.set_deterministic_debug_mode(mode)
        assert states(ember) == states(torch), mode
    for call in (lambda m: m.use_deterministic_algorithms(1),
                 lambda m: m.use_deterministic_algorithms(True, warn_only=1),
                 lambda m: m.set_deterministic_debug_mode(5),
                 lambda m: m.set_deterministic_debug_mode("bad"),
                 lambda m: m.set_deterministic_debug_mode(1.0)):
        compare_error(call)


def test_deterministic_mode_fills_uninitialized_memory_as_torch(restore_switches):
    for lib in (torch, ember):
        lib.use_deterministic_algorithms(True)
    try:
        for name in ("float32", "float64", "int64", "int32", "uint8", "bool", "complex64"):
            t = torch.empty(3, dtype=getattr(torch, name))
            e = ember.empty(3, dtype=getattr(ember, name))
            np.testing.assert_array_equal(np.asarray(e), t.numpy(), err_msg=name)
        np.testing.assert_array_equal(np.asarray(ember.empty_like(ember.ones(2, 2))),
                                      torch.empty_like(torch.ones(2, 2)).numpy())
        np.testing.assert_array_equal(np.asarray(ember.ones(2).new_empty(3)),
                                      torch.ones(2).new_empty(3).numpy())
        np.testing.assert_array_equal(np.asarray(ember.empty_strided((2, 3), (1, 2))),
                                      torch.empty_strided((2, 3), (1, 2)).numpy())
        np.testing.assert_array_equal(
            np.asarray(ember.empty_permuted((2, 3), (1, 0), dtype=ember.int32)),
            torch.empty_permuted((2, 3), (1, 0), dtype=torch.int32).numpy())
        np.testing.assert_array_equal(
            np.asarray(ember.empty(2, 3, 4, 5, memory_format=ember.channels_last)),
            torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).numpy())
    finally:
        for lib in (torch, ember):
            lib.use_deterministic_algorithms(False)


def test_warn_always_switch_matches_torch(restore_switches):
    assert ember.is_warn_always_enabled() == torch.is_warn_always_enabled()
    ember.set_warn_always(True)
    torch.set_warn_always(True)
    assert ember.is_warn_always_enabled() is torch.is_warn_always_enabled() is True
    compare_error(lambda m: m.set_warn_always("x"))


def test_flag_modules_load_lazily():
    import subprocess
    import sys
    code = ("import sys, ember; mods = [m for m in sys.modules if m.startswith('ember.backends.')"
            " and m.rsplit('.', 1)[1] in ('cudnn', 'mps', 'mkldnn', 'mkl', 'openmp')]; "
            "print(mods); import ember.backends.cudnn; "
            "assert ember.backends.cudnn.version() is None")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.backends.cudnn is eb.cudnn


def test_pin_memory_without_an_accelerator_raises_as_torch():
    with _only_builtin_backends():
        for lib in (torch, ember):
            x = lib.ones(3)
            assert x.is_pinned() is False
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when none "
                                                   "is available"):
                x.pin_memory()
    # with an accelerator whose backend cannot pin, the error says so instead of faking it
    with pytest.raises(RuntimeError, match="testdev backend does not provide page-locked"):
        ember.ones(3).pin_memory()


def test_threads():
    n = ember.get_num_threads()
    assert isinstance(n, int) and n >= 1
    ember.set_num_threads(1)
    try:
        assert ember.get_num_threads() == 1
    finally:
        ember.set_num_threads(n)
    with pytest.raises(RuntimeError):
        ember.set_num_threads(0)
