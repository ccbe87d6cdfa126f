"""``cuda_sources=``: CUDA kernels compiled at run time by NVRTC through CuPy's ``RawModule``.

There is no nvcc step, so what NVRTC compiles is device code: ``__global__`` kernels (and the
``__device__`` functions they call). The host side that torch's extensions write in C++
(``kernel<<<grid, block>>>(...)``) is a Python call here: each kernel named in ``functions``
becomes ``module.kernel(grid, block, args, shared_mem=0)``, launched on Ember's current CUDA
stream with each tensor argument passed as its device pointer (its CuPy array, no copy).
Scalars are passed as CuPy passes them: give NumPy scalars of the kernel's parameter types
(``numpy.int32(n)`` for an ``int``, ``numpy.float32(a)`` for a ``float``)."""
import re

_HOST_INCLUDE = re.compile(r"^\s*#\s*include\s*<(torch/extension\.h|ATen/.*|c10/.*)>.*$",
                           re.MULTILINE)


def _cupy():
    from ...cuda import _cupy_or_none
    cupy = _cupy_or_none()
    if cupy is None:
        raise RuntimeError("load_inline(cuda_sources=...) compiles with NVRTC through CuPy on a "
                           "CUDA device: install it with pip install 'ember[cuda]' and run where "
                           "a GPU is visible")
    return cupy


def kernel_names(source):
    bounds = r"(?:__launch_bounds__\([^)]*\)\s*)?"
    return re.findall(r"__global__\s+" + bounds + r"(?:static\s+)?void\s+" + bounds +
                      r"(\w+)\s*\(", source)


def build(name, source, functions, extra_cuda_cflags, verbose):
    """{kernel name: launcher} for the kernels of ``source`` named in ``functions`` (all of
    them when ``functions`` names none)."""
    # Host headers mean nothing to NVRTC; tutorial sources include them out of habit.
    device_source = _HOST_INCLUDE.sub("", source)
    if "<<<" in device_source:
        raise RuntimeError(f"Error building extension '{name}': cuda_sources is compiled by "
                           "NVRTC, which builds device code only; launch kernels from Python "
                           "(module.kernel(grid, block, args)) instead of with <<<...>>>")
    found = kernel_names(device_source)
    wanted = [f for f in (functions or found) if f in found]
    cupy = _cupy()
    options = tuple(["--std=c++17", *(extra_cuda_cflags or [])])
    # A kernel without extern "C" has a C++-mangled name: NVRTC finds it by name expression.
    mangled = [k for k in wanted if not re.search(r'extern\s+"C"[^;{]*?\b' + k + r"\s*\(",
                                                  device_source)]
    try:
        module = cupy.RawModule(code=device_source, options=options,
                                name_expressions=mangled or None)
        kernels = {k: module.get_function(k) for k in wanted}
    except Exception as e:  # CuPy raises CompileException with NVRTC's log
        raise RuntimeError(f"Error building extension '{name}' (NVRTC):\n{e}") from e
    if verbose:
        print(f"Built CUDA kernels {wanted} of extension {name} with NVRTC")
    return {k: _launcher(k, kernel, cupy) for k, kernel in kernels.items()}


def _launcher(name, kernel, cupy):
    from ..._tensor import Tensor

    def launch(grid, block, args, shared_mem=0):
        converted = []
        for a in args:
            if isinstance(a, Tensor):
                if a.device.type != "cuda":
                    raise RuntimeError(f"{name}: expected a CUDA tensor, got one on {a.device}")
                converted.append(a._data)
            else:
                converted.append(a)
        grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        block = tuple(block) if isinstance(block, (tuple, list)) else (block,)
        kernel(grid, block, tuple(converted), shared_mem=shared_mem)

    launch.__name__ = launch.__qualname__ = name
    launch.__doc__ = f"Launch the CUDA kernel {name}: {name}(grid, block, args, shared_mem=0)."
    return launch
