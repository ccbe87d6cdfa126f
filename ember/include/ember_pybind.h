// PYBIND11_MODULE and m.def without pybind11: each m.def stores a boxed trampoline in a table
// that ember.utils.cpp_extension reads through the extern "C" functions PYBIND11_MODULE
// defines (names, argument names and defaults, docs, and one call entry point). Building
// against real pybind11 costs 8-10 s per extension; this costs nothing beyond the user's code.
#pragma once

namespace ember_ext {

// Results live here until the next call on the same thread: Python copies them out at once.
struct Arena {
    std::deque<std::vector<ember_value>> lists;
    std::deque<std::string> strings;
    std::deque<at::Tensor> tensors;  // keeps returned tensors' sizes/strides alive
    std::deque<std::vector<int64_t>> int_lists;  // backs IntArrayRef arguments during a call
    std::string error;
    void clear() { lists.clear(); strings.clear(); tensors.clear(); int_lists.clear(); }
};
inline Arena& arena() {
    static thread_local Arena a;
    return a;
}

inline const char* kind_name(int32_t k) {
    static const char* names[] = {"None", "Tensor", "int", "float", "bool", "list", "str", "tuple"};
    return k >= 0 && k < 8 ? names[k] : "?";
}
inline void expect(const ember_value& v, int32_t kind, const char* want) {
    if (v.kind != kind) {
        throw c10::TypeError(c10::detail::check_msg("", "expected ", want, ", got ",
                                                    kind_name(v.kind)));
    }
}

template <typename T, typename = void> struct caster;

template <> struct caster<at::Tensor> {
    static at::Tensor from(const ember_value& v) {
        if (v.kind == 0) return at::Tensor();
        expect(v, 1, "a Tensor");
        return at::Tensor(v.t);
    }
    static void to(const at::Tensor& t, ember_value* out) {
        if (!t.defined()) { out->kind = 0; return; }
        arena().tensors.push_back(t);
        out->kind = 1;
        out->t = arena().tensors.back().describe();
    }
};

template <typename T>
struct caster<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
    static T from(const ember_value& v) {
        if (v.kind != 4) expect(v, 2, "an int");
        return static_cast<T>(v.i);
    }
    static void to(T x, ember_value* out) { out->kind = 2; out->i = static_cast<int64_t>(x); }
};

template <> struct caster<bool> {
    static bool from(const ember_value& v) { expect(v, 4, "a bool"); return v.i != 0; }
    static void to(bool x, ember_value* out) { out->kind = 4; out->i = x; }
};

template <typename T> struct caster<T, std::enable_if_t<std::is_floating_point_v<T>>> {
    static T from(const ember_value& v) {
        if (v.kind == 2 || v.kind == 4) return static_cast<T>(v.i);
        expect(v, 3, "a float");
        return static_cast<T>(v.d);
    }
    static void to(T x, ember_value* out) { out->kind = 3; out->d = static_cast<double>(x); }
};

template <> struct caster<std::string> {
    static std::string from(const ember_value& v) { expect(v, 6, "a str"); return v.s; }
    static void to(const std::string& s, ember_value* out) {
        arena().strings.push_back(s);
        out->kind = 6;
        out->s = arena().strings.back().c_str();
    }
};

template <typename T> struct caster<std::vector<T>> {
    static std::vector<T> from(const ember_value& v) {
        expect(v, 5, "a list");
        std::vector<T> r;
        r.reserve(v.nitems);
        for (int64_t i = 0; i < v.nitems; ++i) r.push_back(caster<T>::from(v.items[i]));
        return r;
    }
    static void to(const std::vector<T>& xs, ember_value* out) {
        arena().lists.emplace_back(xs.size());
        std::vector<ember_value>& items = arena().lists.back();
        for (size_t i = 0; i < xs.size(); ++i) caster<T>::to(xs[i], &items[i]);
        out->kind = 5;
        out->items = items.data();
        out->nitems = static_cast<int64_t>(items.size());
    }
};

template <> struct caster<c10::IntArrayRef> {
    static c10::IntArrayRef from(const ember_value& v) {
        arena().int_lists.push_back(caster<std::vector<int64_t>>::from(v));
        return c10::IntArrayRef(arena().int_lists.back());
    }
    static void to(c10::IntArrayRef a, ember_value* out) { caster<std::vector<int64_t>>::to(a.vec(), out); }
};

template <typename T> struct caster<std::optional<T>> {
    static std::optional<T> from(const ember_value& v) {
        if (v.kind == 0) return std::nullopt;
        return caster<T>::from(v);
    }
    static void to(const std::optional<T>& x, ember_value* out) {
        if (!x) { out->kind = 0; return; }
        caster<T>::to(*x, out);
    }
};

template <typename... Ts> struct caster<std::tuple<Ts...>> {
    template <size_t... I>
    static void fill(const std::tuple<Ts...>& t, ember_value* items, std::index_sequence<I...>) {
        (caster<std::decay_t<Ts>>::to(std::get<I>(t), &items[I]), ...);
    }
    static void to(const std::tuple<Ts...>& t, ember_value* out) {
        arena().lists.emplace_back(sizeof...(Ts));
        std::vector<ember_value>& items = arena().lists.back();
        fill(t, items.data(), std::index_sequence_for<Ts...>{});
        out->kind = 7;
        out->items = items.data();
        out->nitems = static_cast<int64_t>(sizeof...(Ts));
    }
};

template <typename A, typename B> struct caster<std::pair<A, B>> {
    static void to(const std::pair<A, B>& p, ember_value* out) {
        caster<std::tuple<A, B>>::to(std::make_tuple(p.first, p.second), out);
    }
};

struct Entry {
    std::string name, doc;
    int64_t arity;
    std::vector<std::string> arg_names;
    std::vector<ember_value> defaults;  // kind -1: no default
    std::function<void(const ember_value*, ember_value*)> call;
};
inline std::vector<Entry>& table() {
    static std::vector<Entry> t;
    return t;
}
inline std::string& module_doc() {
    static std::string d;
    return d;
}

template <typename F> struct signature : signature<decltype(&F::operator())> {};
template <typename R, typename... A> struct signature<R (*)(A...)> {
    using ret = R;
    using args = std::tuple<A...>;
};
template <typename R, typename... A> struct signature<R(A...)> : signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct signature<R (C::*)(A...) const> : signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct signature<R (C::*)(A...)> : signature<R (*)(A...)> {};

template <typename F, typename R, typename... A, size_t... I>
void invoke(F& f, const ember_value* args, ember_value* out, std::index_sequence<I...>) {
    std::tuple<std::decay_t<A>...> converted{caster<std::decay_t<A>>::from(args[I])...};
    if constexpr (std::is_void_v<R>) {
        f(std::get<I>(converted)...);
        out->kind = 0;
    } else {
        caster<std::decay_t<R>>::to(f(std::get<I>(converted)...), out);
    }
}

}  // namespace ember_ext

namespace pybind11 {

struct arg_v;
struct arg {
    const char* name;
    explicit arg(const char* n) : name(n) {}
    template <typename T> arg_v operator=(T&& value) const;
};
struct arg_v {
    const char* name;
    ember_value value;
};
template <typename T> arg_v arg::operator=(T&& value) const {
    arg_v a{name, {}};
    std::memset(&a.value, 0, sizeof(a.value));
    ember_ext::caster<std::decay_t<T>>::to(value, &a.value);
    return a;
}
namespace literals {
inline arg operator""_a(const char* name, size_t) { return arg(name); }
}  // namespace literals

class module_ {
    template <typename T> void extra(ember_ext::Entry& e, const T&) {
        static_assert(sizeof(T) == 0, "m.def: Ember's bindings take a docstring and py::arg "
                                      "annotations only (no return_value_policy, call_guard…)");
    }
    void extra(ember_ext::Entry& e, const char* doc) { e.doc = doc; }
    void extra(ember_ext::Entry& e, const std::string& doc) { e.doc = doc; }
    void extra(ember_ext::Entry& e, const arg& a) {
        e.arg_names.push_back(a.name);
        ember_value none;
        std::memset(&none, 0, sizeof(none));
        none.kind = -1;
        e.defaults.push_back(none);
    }
    void extra(ember_ext::Entry& e, const arg_v& a) {
        e.arg_names.push_back(a.name);
        e.defaults.push_back(a.value);
    }

  public:
    template <typename F, typename... Extra>
    module_& def(const char* name, F f, const Extra&... extra_args) {
        using sig = ember_ext::signature<std::decay_t<std::remove_pointer_t<F>>>;
        using R = typename sig::ret;
        ember_ext::Entry e;
        e.name = name;
        e.arity = static_cast<int64_t>(std::tuple_size_v<typename sig::args>);
        e.call = make(f, static_cast<R*>(nullptr), static_cast<typename sig::args*>(nullptr));
        (extra(e, extra_args), ...);
        if (!e.arg_names.empty() && static_cast<int64_t>(e.arg_names.size()) != e.arity) {
            throw c10::Error(std::string("m.def(\"") + name + "\"): " +
                             std::to_string(e.arg_names.size()) + " py::arg annotations for " +
                             std::to_string(e.arity) + " parameters");
        }
        ember_ext::table().push_back(std::move(e));
        return *this;
    }
    std::string& doc() { return ember_ext::module_doc(); }

  private:
    template <typename F, typename R, typename... A>
    static std::function<void(const ember_value*, ember_value*)> make(F f, R*, std::tuple<A...>*) {
        return [f](const ember_value* args, ember_value* out) mutable {
            ember_ext::invoke<F, R, A...>(f, args, out, std::index_sequence_for<A...>{});
        };
    }
};
using module = module_;

}  // namespace pybind11

// Error kinds for Python: 1 RuntimeError, 2 ValueError, 3 TypeError, 4 IndexError,
// 5 NotImplementedError, 6 MemoryError.
#define EMBER_EXT_CATCH(errvar)                                                              \
    catch (const ::c10::ValueError& e) { errvar = e.what(); return 2; }                      \
    catch (const ::c10::TypeError& e) { errvar = e.what(); return 3; }                       \
    catch (const ::c10::IndexError& e) { errvar = e.what(); return 4; }                      \
    catch (const ::c10::NotImplementedError& e) { errvar = e.what(); return 5; }             \
    catch (const ::c10::Error& e) { errvar = e.what(); return 1; }                           \
    catch (const std::invalid_argument& e) { errvar = e.what(); return 2; }                  \
    catch (const std::domain_error& e) { errvar = e.what(); return 2; }                      \
    catch (const std::length_error& e) { errvar = e.what(); return 2; }                      \
    catch (const std::out_of_range& e) { errvar = e.what(); return 4; }                      \
    catch (const std::bad_alloc& e) { errvar = e.what(); return 6; }                         \
    catch (const std::exception& e) { errvar = e.what(); return 1; }                         \
    catch (...) { errvar = "unknown C++ exception"; return 1; }

#define EMBER_STRINGIFY_(x) #x
#define EMBER_STRINGIFY(x) EMBER_STRINGIFY_(x)
#define PYBIND11_MODULE(ember_module_name_, ember_module_var_)                                                      \
    static void ember_pybind_init_(::pybind11::module_& ember_module_var_);                           \
    extern "C" {                                                                             \
    int ember_ext_abi(void) { return EMBER_EXTENSION_ABI; }                                  \
    const char* ember_ext_name(void) { return EMBER_STRINGIFY(ember_module_name_); }                                      \
    int ember_ext_init(void) {                                                               \
        ::pybind11::module_ m;                                                               \
        try { ember_pybind_init_(m); return 0; }                                             \
        EMBER_EXT_CATCH(::ember_ext::arena().error)                                          \
    }                                                                                        \
    void ember_ext_set_allocator(ember_alloc_fn fn) { ::ember_ext::allocator() = fn; }       \
    void ember_ext_set_num_threads(int n) { ::ember_ext::intra_op_threads() = n > 0 ? n : 1; } \
    const char* ember_ext_module_doc(void) { return ::ember_ext::module_doc().c_str(); }     \
    int64_t ember_ext_count(void) { return (int64_t)::ember_ext::table().size(); }           \
    const char* ember_ext_fn_name(int64_t i) { return ::ember_ext::table()[i].name.c_str(); } \
    const char* ember_ext_fn_doc(int64_t i) { return ::ember_ext::table()[i].doc.c_str(); }  \
    int64_t ember_ext_fn_arity(int64_t i) { return ::ember_ext::table()[i].arity; }          \
    int64_t ember_ext_fn_named(int64_t i) {                                                  \
        return (int64_t)::ember_ext::table()[i].arg_names.size(); }                          \
    const char* ember_ext_fn_arg(int64_t i, int64_t j) {                                     \
        return ::ember_ext::table()[i].arg_names[j].c_str(); }                               \
    const ember_value* ember_ext_fn_default(int64_t i, int64_t j) {                          \
        return &::ember_ext::table()[i].defaults[j]; }                                       \
    const char* ember_ext_error(void) { return ::ember_ext::arena().error.c_str(); }         \
    int ember_ext_call(int64_t i, const ember_value* args, ember_value* out) {               \
        ::ember_ext::arena().clear();                                                        \
        try { ::ember_ext::table()[i].call(args, out); return 0; }                           \
        EMBER_EXT_CATCH(::ember_ext::arena().error)                                          \
    }                                                                                        \
    }                                                                                        \
    static void ember_pybind_init_(::pybind11::module_& ember_module_var_)

namespace py = pybind11;
