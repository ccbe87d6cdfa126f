"""The named results of ops that return several tensors, as ``torch.return_types``.

``x.max(0)`` returns an ``ember.return_types.max``: a tuple that also names its fields
(``.values``, ``.indices``). Like torch's structseq classes, each is built from one sequence
(``return_types.max((values, indices))``), prints one field a line, pickles by name and has
``n_fields``. The ``*_out`` classes are the ones torch returns when the op was given ``out=``.
This is the only home of these classes: the ops import them from here.
"""
import operator

__all__ = ["all_return_types"]


class _StructSeq(tuple):
    """A tuple with named fields, built from one sequence as a torch structseq is."""
    __slots__ = ()
    _fields = ()

    def __new__(cls, sequence, dict=None):
        if isinstance(sequence, (str, bytes)) or not hasattr(sequence, "__iter__"):
            raise TypeError("constructor requires a sequence")
        values = tuple(sequence)
        if len(values) != len(cls._fields):
            raise TypeError(f"ember.return_types.{cls.__name__}() takes a "
                            f"{len(cls._fields)}-sequence ({len(values)}-sequence given)")
        return tuple.__new__(cls, values)

    @property
    def n_fields(self):
        return len(self._fields)

    n_sequence_fields = n_fields

    @property
    def n_unnamed_fields(self):
        return 0

    def __repr__(self):
        body = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"ember.return_types.{type(self).__name__}(\n{body})"

    def __reduce__(self):
        return type(self), (tuple(self), {})


def _define(name, fields):
    namespace = {"__slots__": (), "_fields": tuple(fields), "__module__": __name__,
                 "__qualname__": name}
    namespace.update({field: property(operator.itemgetter(i), doc=f"Field {i}: {field}")
                      for i, field in enumerate(fields)})
    return type(name, (_StructSeq,), namespace)


_VALUES_INDICES = ("values", "indices")
# Every named result torch has, with its fields; the boolean says whether torch also has the
# ``<name>_out`` class that an ``out=`` call returns.
_FIELDS = {
    "aminmax": (("min", "max"), True),
    "cummax": (_VALUES_INDICES, True),
    "cummin": (_VALUES_INDICES, True),
    "frexp": (("mantissa", "exponent"), True),
    "geqrf": (("a", "tau"), True),
    "histogram": (("hist", "bin_edges"), True),
    "histogramdd": (("hist", "bin_edges"), False),
    "kthvalue": (_VALUES_INDICES, True),
    "linalg_cholesky_ex": (("L", "info"), True),
    "linalg_eig": (("eigenvalues", "eigenvectors"), True),
    "linalg_eigh": (("eigenvalues", "eigenvectors"), True),
    "linalg_inv_ex": (("inverse", "info"), True),
    "linalg_ldl_factor": (("LD", "pivots"), True),
    "linalg_ldl_factor_ex": (("LD", "pivots", "info"), True),
    "linalg_lstsq": (("solution", "residuals", "rank", "singular_values"), True),
    "linalg_lu": (("P", "L", "U"), True),
    "linalg_lu_factor": (("LU", "pivots"), True),
    "linalg_lu_factor_ex": (("LU", "pivots", "info"), True),
    "linalg_qr": (("Q", "R"), True),
    "linalg_slogdet": (("sign", "logabsdet"), True),
    "linalg_solve_ex": (("result", "info"), True),
    "linalg_svd": (("U", "S", "Vh"), True),
    "lu_unpack": (("P", "L", "U"), True),
    "max": (_VALUES_INDICES, True),
    "median": (_VALUES_INDICES, True),
    "min": (_VALUES_INDICES, True),
    "mode": (_VALUES_INDICES, True),
    "nanmedian": (_VALUES_INDICES, True),
    "qr": (("Q", "R"), True),
    "slogdet": (("sign", "logabsdet"), True),
    "sort": (_VALUES_INDICES, True),
    "svd": (("U", "S", "V"), True),
    "topk": (_VALUES_INDICES, True),
    "triangular_solve": (("solution", "cloned_coefficient"), True),
}

all_return_types = []
for _name, (_fields, _has_out) in _FIELDS.items():
    for _class_name in (_name, f"{_name}_out") if _has_out else (_name,):
        globals()[_class_name] = _define(_class_name, _fields)
        all_return_types.append(globals()[_class_name])
        __all__.append(_class_name)
del _name, _fields, _has_out, _class_name
