// Ember's <torch/extension.h>: the subset of PyTorch's C++ extension API that tutorial-style
// kernels use, bound to Ember through a C ABI that ember.utils.cpp_extension loads with ctypes.
//
// What is here: torch::Tensor as a view of an Ember tensor's memory (data_ptr<T>(), numel(),
// sizes(), strides(), size(i), stride(i), dim(), scalar_type(), options(), is_contiguous(),
// contiguous(), accessor<T, N>()), the factories empty/zeros/ones/full and their *_like forms
// (allocated by Ember through a callback, so a returned tensor is an ordinary Ember tensor),
// at::parallel_for / parallel_reduce / get_num_threads (ember.set_num_threads reaches them),
// TORCH_CHECK and friends, AT_DISPATCH_*_TYPES, and PYBIND11_MODULE with m.def(name, fn, doc,
// py::arg(...)) for functions of Tensors, integers, floats, bools, strings, std::vector and
// std::optional of those, returning any of them or a std::tuple.
// What is not: ATen's operators (torch::matmul, x.sum(), torch::sigmoid…), autograd from C++,
// pybind11 classes, TORCH_LIBRARY registrations. See docs/extending.md.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#ifdef _WIN32
#include <process.h>
#else
#include <unistd.h>
#endif

#define EMBER_EXTENSION_ABI 1

extern "C" {
// One tensor as Ember hands it over: the memory is the Ember tensor's own (no copy); strides
// are in elements; handle names the Ember tensor on the Python side.
typedef struct ember_tensor {
    void* data;
    const int64_t* sizes;
    const int64_t* strides;
    int64_t ndim;
    int32_t dtype;  // c10::ScalarType's numbering
    int32_t device_type;
    int32_t device_index;
    int32_t requires_grad;
    int64_t handle;
} ember_tensor;

// A boxed argument or result. kind: 0 None, 1 Tensor, 2 int, 3 float, 4 bool, 5 list, 6 str,
// 7 tuple.
typedef struct ember_value {
    int32_t kind;
    int32_t _pad;
    int64_t i;
    double d;
    ember_tensor t;
    struct ember_value* items;
    int64_t nitems;
    const char* s;
} ember_value;

// Allocates an Ember tensor (fill 0: uninitialised, 1: every element = fill_value) and
// describes it in *out; returns 0, or nonzero after Python recorded why it failed.
typedef int (*ember_alloc_fn)(int64_t ndim, const int64_t* sizes, int32_t dtype,
                              int32_t device_type, int32_t device_index, int32_t fill,
                              double fill_value, int32_t requires_grad, ember_tensor* out);
}

namespace c10 {

using std::optional;  // c10::optional is std::optional in current PyTorch
using std::nullopt;

enum class ScalarType : int8_t {
    Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
    ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, BFloat16 = 15,
    UInt16 = 27, UInt32 = 28, UInt64 = 29, Undefined = 127
};

// Storage-only 16-bit floats: data_ptr<c10::Half>() gives the bits; Ember does no arithmetic
// on them in C++.
struct Half { uint16_t x; };
struct BFloat16 { uint16_t x; };

inline const char* toString(ScalarType t) {
    switch (t) {
        case ScalarType::Byte: return "Byte";
        case ScalarType::Char: return "Char";
        case ScalarType::Short: return "Short";
        case ScalarType::Int: return "Int";
        case ScalarType::Long: return "Long";
        case ScalarType::Half: return "Half";
        case ScalarType::Float: return "Float";
        case ScalarType::Double: return "Double";
        case ScalarType::ComplexHalf: return "ComplexHalf";
        case ScalarType::ComplexFloat: return "ComplexFloat";
        case ScalarType::ComplexDouble: return "ComplexDouble";
        case ScalarType::Bool: return "Bool";
        case ScalarType::BFloat16: return "BFloat16";
        case ScalarType::UInt16: return "UInt16";
        case ScalarType::UInt32: return "UInt32";
        case ScalarType::UInt64: return "UInt64";
        default: return "Undefined";
    }
}

inline std::ostream& operator<<(std::ostream& o, ScalarType t) { return o << toString(t); }

inline size_t elementSize(ScalarType t) {
    switch (t) {
        case ScalarType::Byte: case ScalarType::Char: case ScalarType::Bool: return 1;
        case ScalarType::Short: case ScalarType::Half: case ScalarType::BFloat16:
        case ScalarType::UInt16: return 2;
        case ScalarType::Int: case ScalarType::Float: case ScalarType::ComplexHalf:
        case ScalarType::UInt32: return 4;
        case ScalarType::ComplexFloat: return 8;
        case ScalarType::ComplexDouble: return 16;
        default: return 8;  // Long, Double, UInt64
    }
}

template <typename T> struct CppTypeToScalarType;
#define EMBER_SCALAR_TYPE_OF(cpp, st) \
    template <> struct CppTypeToScalarType<cpp> { static constexpr ScalarType value = ScalarType::st; };
EMBER_SCALAR_TYPE_OF(uint8_t, Byte)
EMBER_SCALAR_TYPE_OF(int8_t, Char)
EMBER_SCALAR_TYPE_OF(int16_t, Short)
EMBER_SCALAR_TYPE_OF(int32_t, Int)
EMBER_SCALAR_TYPE_OF(int64_t, Long)
EMBER_SCALAR_TYPE_OF(float, Float)
EMBER_SCALAR_TYPE_OF(double, Double)
EMBER_SCALAR_TYPE_OF(bool, Bool)
EMBER_SCALAR_TYPE_OF(Half, Half)
EMBER_SCALAR_TYPE_OF(BFloat16, BFloat16)
EMBER_SCALAR_TYPE_OF(uint16_t, UInt16)
EMBER_SCALAR_TYPE_OF(uint32_t, UInt32)
EMBER_SCALAR_TYPE_OF(uint64_t, UInt64)
#undef EMBER_SCALAR_TYPE_OF

// Exceptions: each reaches Python as the exception torch raises for it.
class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};
class ValueError : public Error { using Error::Error; };
class TypeError : public Error { using Error::Error; };
class IndexError : public Error { using Error::Error; };
class NotImplementedError : public Error { using Error::Error; };

namespace detail {
inline void cat_(std::ostringstream&) {}
template <typename T, typename... Rest>
inline void cat_(std::ostringstream& o, const T& t, const Rest&... rest) {
    o << t;
    cat_(o, rest...);
}
template <typename... Args>
inline std::string check_msg(const char* cond, const Args&... args) {
    if constexpr (sizeof...(Args) == 0) {
        return std::string("Expected ") + cond + " to be true, but got false.";
    } else {
        std::ostringstream o;
        cat_(o, args...);
        return o.str();
    }
}
}  // namespace detail

enum class DeviceType : int8_t { CPU = 0, CUDA = 1, PrivateUse1 = 20 };

struct Device {
    DeviceType type_ = DeviceType::CPU;
    int8_t index_ = -1;
    Device() = default;
    Device(DeviceType t, int index = -1) : type_(t), index_(static_cast<int8_t>(index)) {}
    DeviceType type() const { return type_; }
    int8_t index() const { return index_; }
    bool is_cpu() const { return type_ == DeviceType::CPU; }
    bool is_cuda() const { return type_ == DeviceType::CUDA; }
    bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
    bool operator!=(const Device& o) const { return !(*this == o); }
};

template <typename T>
class ArrayRef {
    const T* data_ = nullptr;
    size_t size_ = 0;

  public:
    ArrayRef() = default;
    ArrayRef(const T& one) : data_(&one), size_(1) {}
    ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
    ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
    // Lives as long as the braced list: torch::empty({n, m}, options) uses it within the call.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
    ArrayRef(const std::initializer_list<T>& l) : data_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
    const T* begin() const { return data_; }
    const T* end() const { return data_ + size_; }
    const T* data() const { return data_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const T& operator[](size_t i) const { return data_[i]; }
    const T& front() const { return data_[0]; }
    const T& back() const { return data_[size_ - 1]; }
    std::vector<T> vec() const { return std::vector<T>(data_, data_ + size_); }
    operator std::vector<T>() const { return vec(); }
    bool equals(ArrayRef o) const { return size_ == o.size_ && std::equal(begin(), end(), o.begin()); }
    bool operator==(ArrayRef o) const { return equals(o); }
    bool operator!=(ArrayRef o) const { return !equals(o); }
};
using IntArrayRef = ArrayRef<int64_t>;

template <typename T>
inline std::ostream& operator<<(std::ostream& o, ArrayRef<T> a) {
    o << "[";
    for (size_t i = 0; i < a.size(); ++i) o << (i ? ", " : "") << a[i];
    return o << "]";
}

}  // namespace c10

// do/while: each is one statement, safe under an unbraced if/else.
#define EMBER_CHECK_AS(kind, cond, ...) \
    do { if (!(cond)) throw kind(::c10::detail::check_msg(#cond, ##__VA_ARGS__)); } while (0)
#define TORCH_CHECK(cond, ...) EMBER_CHECK_AS(::c10::Error, cond, ##__VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) EMBER_CHECK_AS(::c10::ValueError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) EMBER_CHECK_AS(::c10::TypeError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) EMBER_CHECK_AS(::c10::IndexError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) \
    EMBER_CHECK_AS(::c10::NotImplementedError, cond, ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) \
    do { if (!(cond)) throw ::c10::Error(std::string("INTERNAL ASSERT FAILED at \"") + __FILE__ + \
                                         "\":" + std::to_string(__LINE__) + ": " + \
                                         ::c10::detail::check_msg(#cond, ##__VA_ARGS__)); } while (0)
#define TORCH_WARN(...) (std::cerr << "Warning: " << ::c10::detail::check_msg("", __VA_ARGS__) << "\n")

namespace ember_ext {
inline ember_alloc_fn& allocator() {
    static ember_alloc_fn fn = nullptr;
    return fn;
}
// at::parallel_for's thread count: the loader sets it to ember.get_num_threads(), and
// ember.set_num_threads reaches every loaded extension.
inline int& intra_op_threads() {
    static int n = 1;
    return n;
}
inline bool& in_parallel_region() {
    static thread_local bool inside = false;
    return inside;
}
inline int& thread_num() {
    static thread_local int num = 0;
    return num;
}

inline long process_id() {
#ifdef _WIN32
    return _getpid();
#else
    return static_cast<long>(getpid());
#endif
}

// The workers at::parallel_for hands its chunks to: starting a thread costs 50-100 us, waking
// a waiting one a few. Chunk k runs on worker k and the caller takes chunk 0, as ATen's static
// OpenMP schedule does; workers start the first time a loop needs them and then wait. One loop
// at a time: a caller that finds the pool busy (another Python thread's call: ctypes releases
// the GIL) runs its loop serially.
class WorkerPool {
  public:
    explicit WorkerPool(long owner) : owner(owner) {}
    const long owner;  // the process whose threads these are

    // Runs task(0) on the caller and task(1..chunks-1) on workers; false if busy.
    bool run(int64_t chunks, const std::function<void(int64_t)>& task) {
        std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
        if (!busy.owns_lock()) return false;
        {
            std::lock_guard<std::mutex> lock(mu_);
            while (static_cast<int64_t>(started_) < chunks - 1) {
                const int64_t index = ++started_;
                std::thread([this, index] { work(index); }).detach();
            }
            task_ = &task;
            chunks_ = chunks;
            remaining_ = chunks - 1;
            ++generation_;
        }
        wake_.notify_all();
        task(0);
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [this] { return remaining_ == 0; });
        task_ = nullptr;
        return true;
    }

  private:
    void work(int64_t index) {
        uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            wake_.wait(lock, [&] { return generation_ != seen; });
            seen = generation_;
            if (index >= chunks_) continue;
            const std::function<void(int64_t)>* task = task_;
            lock.unlock();
            (*task)(index);
            lock.lock();
            if (--remaining_ == 0) done_.notify_one();
        }
    }

    std::mutex busy_, mu_;
    std::condition_variable wake_, done_;
    const std::function<void(int64_t)>* task_ = nullptr;
    int64_t started_ = 0, chunks_ = 0, remaining_ = 0;
    uint64_t generation_ = 0;
};

// The pool of this process. A forked child has none of its parent's threads, and the parent's
// locks may have been held by one of them: it starts a pool of its own and leaves the old one
// untouched (never freed, as the pool of the process itself never is: its workers wait until
// the process ends).
inline WorkerPool* worker_pool() {
    static std::atomic<WorkerPool*> current{nullptr};
    WorkerPool* pool = current.load(std::memory_order_acquire);
    const long pid = process_id();
    if (pool != nullptr && pool->owner == pid) return pool;
    WorkerPool* fresh = new WorkerPool(pid);
    if (current.compare_exchange_strong(pool, fresh, std::memory_order_acq_rel)) return fresh;
    delete fresh;  // another thread installed one first
    return pool;
}
}  // namespace ember_ext

namespace at {
using c10::ScalarType;
using c10::IntArrayRef;
using c10::ArrayRef;
using c10::Device;
using c10::DeviceType;
using c10::Half;
using c10::BFloat16;

constexpr ScalarType kByte = ScalarType::Byte, kChar = ScalarType::Char,
                     kShort = ScalarType::Short, kInt = ScalarType::Int,
                     kLong = ScalarType::Long, kHalf = ScalarType::Half,
                     kFloat = ScalarType::Float, kDouble = ScalarType::Double,
                     kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16,
                     kComplexFloat = ScalarType::ComplexFloat,
                     kComplexDouble = ScalarType::ComplexDouble,
                     kUInt8 = ScalarType::Byte, kInt8 = ScalarType::Char,
                     kInt16 = ScalarType::Short, kInt32 = ScalarType::Int,
                     kInt64 = ScalarType::Long, kFloat16 = ScalarType::Half,
                     kFloat32 = ScalarType::Float, kFloat64 = ScalarType::Double;
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA;
enum class Layout : int8_t { Strided = 0 };
constexpr Layout kStrided = Layout::Strided;

class TensorOptions {
    ScalarType dtype_ = ScalarType::Float;
    Device device_;
    bool requires_grad_ = false;

  public:
    TensorOptions() = default;
    TensorOptions(ScalarType t) : dtype_(t) {}
    TensorOptions(Device d) : device_(d) {}
    TensorOptions(DeviceType d) : device_(d) {}
    TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dtype_ = t; return o; }
    TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; return o; }
    TensorOptions device(DeviceType t, int index = -1) const { return device(Device(t, index)); }
    TensorOptions requires_grad(bool r) const { TensorOptions o = *this; o.requires_grad_ = r; return o; }
    TensorOptions layout(Layout) const { return *this; }  // strided is the only layout
    ScalarType dtype() const { return dtype_; }
    Device device() const { return device_; }
    bool requires_grad() const { return requires_grad_; }
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

template <typename T, size_t N>
class TensorAccessor {
    T* data_;
    const int64_t* sizes_;
    const int64_t* strides_;

  public:
    TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
        : data_(data), sizes_(sizes), strides_(strides) {}
    TensorAccessor<T, N - 1> operator[](int64_t i) const {
        return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
    }
    int64_t size(int64_t d) const { return sizes_[d]; }
    int64_t stride(int64_t d) const { return strides_[d]; }
    T* data() const { return data_; }
};

template <typename T>
class TensorAccessor<T, 1> {
    T* data_;
    const int64_t* sizes_;
    const int64_t* strides_;

  public:
    TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
        : data_(data), sizes_(sizes), strides_(strides) {}
    T& operator[](int64_t i) const { return data_[i * strides_[0]]; }
    int64_t size(int64_t d) const { return sizes_[d]; }
    int64_t stride(int64_t d) const { return strides_[d]; }
    T* data() const { return data_; }
};

class Tensor;
Tensor empty(IntArrayRef sizes, TensorOptions options = {});

class Tensor {
    struct Impl {
        void* data;
        std::vector<int64_t> sizes, strides;
        ScalarType dtype;
        Device device;
        bool requires_grad;
        int64_t handle;
    };
    std::shared_ptr<Impl> impl_;

    void check_defined(const char* what) const {
        if (!impl_) throw c10::Error(std::string(what) + ": the tensor is undefined");
    }
    int64_t wrap_dim(int64_t d) const {
        int64_t n = dim();
        int64_t lo = n ? -n : -1, hi = n ? n - 1 : 0;
        if (d < lo || d > hi) {
            throw c10::IndexError(c10::detail::check_msg(
                "", "Dimension out of range (expected to be in range of [", lo, ", ", hi,
                "], but got ", d, ")"));
        }
        return d < 0 ? d + n : d;
    }

  public:
    Tensor() = default;
    explicit Tensor(const ember_tensor& t) : impl_(std::make_shared<Impl>()) {
        impl_->data = t.data;
        impl_->sizes.assign(t.sizes, t.sizes + t.ndim);
        impl_->strides.assign(t.strides, t.strides + t.ndim);
        impl_->dtype = static_cast<ScalarType>(t.dtype);
        impl_->device = Device(static_cast<DeviceType>(t.device_type), t.device_index);
        impl_->requires_grad = t.requires_grad != 0;
        impl_->handle = t.handle;
    }
    // The C description of this tensor; valid while this Tensor lives.
    ember_tensor describe() const {
        check_defined("describe");
        ember_tensor t;
        t.data = impl_->data;
        t.sizes = impl_->sizes.data();
        t.strides = impl_->strides.data();
        t.ndim = static_cast<int64_t>(impl_->sizes.size());
        t.dtype = static_cast<int32_t>(impl_->dtype);
        t.device_type = static_cast<int32_t>(impl_->device.type());
        t.device_index = impl_->device.index();
        t.requires_grad = impl_->requires_grad;
        t.handle = impl_->handle;
        return t;
    }

    bool defined() const { return static_cast<bool>(impl_); }
    void* data_ptr() const { check_defined("data_ptr"); return impl_->data; }
    template <typename T>
    T* data_ptr() const {
        check_defined("data_ptr");
        constexpr ScalarType want = c10::CppTypeToScalarType<std::remove_cv_t<T>>::value;
        if (impl_->dtype != want) {
            throw c10::Error(c10::detail::check_msg("", "expected scalar type ", want,
                                                    " but found ", impl_->dtype));
        }
        return static_cast<T*>(impl_->data);
    }
    template <typename T> const T* const_data_ptr() const { return data_ptr<T>(); }
    template <typename T> T* mutable_data_ptr() const { return data_ptr<T>(); }
    const void* const_data_ptr() const { return data_ptr(); }
    void* mutable_data_ptr() const { return data_ptr(); }

    int64_t dim() const { check_defined("dim"); return static_cast<int64_t>(impl_->sizes.size()); }
    int64_t ndimension() const { return dim(); }
    int64_t numel() const {
        check_defined("numel");
        int64_t n = 1;
        for (int64_t s : impl_->sizes) n *= s;
        return n;
    }
    IntArrayRef sizes() const { check_defined("sizes"); return IntArrayRef(impl_->sizes); }
    IntArrayRef strides() const { check_defined("strides"); return IntArrayRef(impl_->strides); }
    int64_t size(int64_t d) const { return impl_->sizes[wrap_dim(d)]; }
    int64_t stride(int64_t d) const { return impl_->strides[wrap_dim(d)]; }
    ScalarType scalar_type() const { check_defined("scalar_type"); return impl_->dtype; }
    ScalarType dtype() const { return scalar_type(); }
    size_t element_size() const { return c10::elementSize(scalar_type()); }
    size_t itemsize() const { return element_size(); }
    size_t nbytes() const { return numel() * element_size(); }
    Device device() const { check_defined("device"); return impl_->device; }
    bool is_cuda() const { return device().is_cuda(); }
    bool is_cpu() const { return device().is_cpu(); }
    bool requires_grad() const { check_defined("requires_grad"); return impl_->requires_grad; }
    TensorOptions options() const { return TensorOptions(scalar_type()).device(device()); }
    int64_t ember_handle() const { return impl_ ? impl_->handle : -1; }

    // torch's rule: strides of size-1 dimensions do not matter.
    bool is_contiguous() const {
        check_defined("is_contiguous");
        int64_t expected = 1;
        for (int64_t d = dim() - 1; d >= 0; --d) {
            if (impl_->sizes[d] == 1) continue;
            if (impl_->strides[d] != expected) return numel() == 0;
            expected *= impl_->sizes[d];
        }
        return true;
    }

    // A contiguous copy (this tensor itself when already contiguous); CPU memory only.
    Tensor contiguous() const {
        if (is_contiguous()) return *this;
        TORCH_CHECK(is_cpu(), "contiguous(): Ember's C++ extensions copy CPU tensors only; "
                              "make the tensor contiguous in Python first");
        Tensor out = at::empty(sizes(), options());
        const size_t es = element_size();
        const int64_t n = numel(), nd = dim();
        std::vector<int64_t> index(nd, 0);
        const char* src = static_cast<const char*>(impl_->data);
        char* dst = static_cast<char*>(out.data_ptr());
        int64_t offset = 0;  // in elements, of the current index in the source
        for (int64_t k = 0; k < n; ++k) {
            std::memcpy(dst + k * es, src + offset * static_cast<int64_t>(es), es);
            for (int64_t d = nd - 1; d >= 0; --d) {
                if (++index[d] < impl_->sizes[d]) { offset += impl_->strides[d]; break; }
                offset -= (impl_->sizes[d] - 1) * impl_->strides[d];
                index[d] = 0;
            }
        }
        return out;
    }

    Tensor& zero_() {
        TORCH_CHECK(is_cpu() && is_contiguous(),
                    "zero_(): Ember's C++ extensions fill contiguous CPU tensors only");
        std::memset(data_ptr(), 0, nbytes());
        return *this;
    }

    template <typename T, size_t N>
    TensorAccessor<T, N> accessor() const {
        TORCH_CHECK(static_cast<size_t>(dim()) == N, "TensorAccessor expected ", N,
                    " dims but tensor has ", dim());
        return TensorAccessor<T, N>(data_ptr<T>(), impl_->sizes.data(), impl_->strides.data());
    }
};

namespace detail {
inline Tensor allocate(IntArrayRef sizes, const TensorOptions& o, int32_t fill, double value) {
    ember_alloc_fn fn = ember_ext::allocator();
    TORCH_CHECK(fn != nullptr, "this library was not loaded by ember.utils.cpp_extension: "
                               "it has no allocator to create tensors with");
    ember_tensor out;
    std::memset(&out, 0, sizeof(out));
    if (fn(static_cast<int64_t>(sizes.size()), sizes.data(), static_cast<int32_t>(o.dtype()),
           static_cast<int32_t>(o.device().type()), o.device().index(), fill, value,
           o.requires_grad(), &out) != 0) {
        throw c10::Error("Ember could not allocate the tensor (the Python error follows)");
    }
    return Tensor(out);
}
}  // namespace detail

inline Tensor empty(IntArrayRef sizes, TensorOptions options) {
    return detail::allocate(sizes, options, 0, 0.0);
}
inline Tensor full(IntArrayRef sizes, double value, TensorOptions options = {}) {
    return detail::allocate(sizes, options, 1, value);
}
inline Tensor zeros(IntArrayRef sizes, TensorOptions options = {}) { return full(sizes, 0.0, options); }
inline Tensor ones(IntArrayRef sizes, TensorOptions options = {}) { return full(sizes, 1.0, options); }
inline Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.options()); }
inline Tensor empty_like(const Tensor& t, TensorOptions o) { return empty(t.sizes(), o); }
inline Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.options()); }
inline Tensor zeros_like(const Tensor& t, TensorOptions o) { return zeros(t.sizes(), o); }
inline Tensor ones_like(const Tensor& t) { return ones(t.sizes(), t.options()); }
inline Tensor ones_like(const Tensor& t, TensorOptions o) { return ones(t.sizes(), o); }
inline Tensor full_like(const Tensor& t, double v) { return full(t.sizes(), v, t.options()); }

// ---- ATen/Parallel.h: intra-op parallelism ---------------------------------------------------
// As ATen's: [begin, end) is cut into at most get_num_threads() chunks of at least grain_size
// elements and f(chunk_begin, chunk_end) runs on each, the calling thread taking the first, the
// pool's workers the others; a parallel_for inside another runs serially; the first exception
// a chunk throws is rethrown.
namespace internal {
constexpr int64_t GRAIN_SIZE = 32768;
}
inline int get_num_threads() { return ::ember_ext::intra_op_threads(); }
inline void set_num_threads(int n) {
    TORCH_CHECK(n > 0, "Expected positive number of threads");
    ::ember_ext::intra_op_threads() = n;
}
inline int get_thread_num() { return ::ember_ext::thread_num(); }
inline bool in_parallel_region() { return ::ember_ext::in_parallel_region(); }

template <class F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
    TORCH_CHECK(grain_size >= 0, "parallel_for: grain_size must be non-negative");
    if (begin >= end) return;
    const int64_t n = end - begin, grain = std::max<int64_t>(grain_size, 1);
    const int64_t chunks = std::min<int64_t>(get_num_threads(), (n + grain - 1) / grain);
    if (chunks <= 1 || in_parallel_region()) {
        f(begin, end);
        return;
    }
    const int64_t step = (n + chunks - 1) / chunks;
    std::vector<std::exception_ptr> errors(chunks);
    const std::function<void(int64_t)> chunk = [&](int64_t k) {
        ::ember_ext::in_parallel_region() = true;
        ::ember_ext::thread_num() = static_cast<int>(k);
        try {
            const int64_t b = begin + k * step;
            if (b < end) f(b, std::min(end, b + step));
        } catch (...) {
            errors[k] = std::current_exception();
        }
        ::ember_ext::in_parallel_region() = false;
        ::ember_ext::thread_num() = 0;
    };
    if (!::ember_ext::worker_pool()->run(chunks, chunk)) {
        f(begin, end);
        return;
    }
    for (auto& e : errors) if (e) std::rethrow_exception(e);
}

// Each chunk folds its range into a partial result starting from ident; sf combines them.
template <class scalar_t, class F, class SF>
inline scalar_t parallel_reduce(int64_t begin, int64_t end, int64_t grain_size,
                                const scalar_t ident, const F& f, const SF& sf) {
    if (begin >= end) return ident;
    const int64_t grain = std::max<int64_t>(grain_size, 1);
    const int64_t chunks = std::max<int64_t>(
        1, std::min<int64_t>(get_num_threads(), (end - begin + grain - 1) / grain));
    const int64_t step = (end - begin + chunks - 1) / chunks;
    std::vector<scalar_t> partial(chunks, ident);
    parallel_for(0, chunks, 1, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) {
            const int64_t b = begin + k * step;
            if (b < end) partial[k] = f(b, std::min(end, b + step), ident);
        }
    });
    scalar_t result = ident;
    for (const auto& p : partial) result = sf(result, p);
    return result;
}

}  // namespace at

namespace torch {
using namespace at;
using at::Tensor;
using at::TensorOptions;
using at::Device;
using at::DeviceType;
using at::ScalarType;
using at::IntArrayRef;
using at::kCPU;
using at::kCUDA;
}  // namespace torch

// ---- AT_DISPATCH: run a lambda with scalar_t bound to the tensor's C++ element type ---------
#define EMBER_DISPATCH_CASE(st, type, ...) \
    case st: { using scalar_t = type; return __VA_ARGS__(); }
#define EMBER_DISPATCH_FAIL(TYPE, NAME) \
    default: throw ::c10::Error(::c10::detail::check_msg("", '"', NAME, "\" not implemented for '", \
                                                         ::c10::toString(TYPE), "'"));
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
    [&] { const ::at::ScalarType _st = TYPE; switch (_st) { \
        EMBER_DISPATCH_CASE(::at::ScalarType::Double, double, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Float, float, __VA_ARGS__) \
        EMBER_DISPATCH_FAIL(_st, NAME) } }()
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) \
    [&] { const ::at::ScalarType _st = TYPE; switch (_st) { \
        EMBER_DISPATCH_CASE(::at::ScalarType::Byte, uint8_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Char, int8_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Short, int16_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Int, int32_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Long, int64_t, __VA_ARGS__) \
        EMBER_DISPATCH_FAIL(_st, NAME) } }()
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) \
    [&] { const ::at::ScalarType _st = TYPE; switch (_st) { \
        EMBER_DISPATCH_CASE(::at::ScalarType::Byte, uint8_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Char, int8_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Short, int16_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Int, int32_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Long, int64_t, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Double, double, __VA_ARGS__) \
        EMBER_DISPATCH_CASE(::at::ScalarType::Float, float, __VA_ARGS__) \
        EMBER_DISPATCH_FAIL(_st, NAME) } }()

#include "../ember_pybind.h"
