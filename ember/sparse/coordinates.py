"""Index arithmetic on the arrays of sparse tensors, written once against a backend's ``xp``.

A COO tensor of ``sparse_dim`` k keeps ``indices`` (k, nnz) and ``values`` (nnz, *dense_shape);
a CSR matrix keeps ``crow`` (rows + 1,), ``col`` (nnz,) and ``values``. Every function here is
whole-array code (sorting, searching, scatter-add): none loops over the non-zeros.
"""


def linear_index(xp, indices, sparse_shape):
    """Each column of ``indices`` as one row-major position in ``sparse_shape``."""
    linear = xp.zeros(indices.shape[1], dtype=xp.int64)
    for dim, size in enumerate(sparse_shape):  # a loop over dimensions, not over non-zeros
        linear = linear * size + indices[dim]
    return linear


def unravel(xp, linear, sparse_shape):
    """The inverse of ``linear_index``: a (k, n) int64 index array."""
    rows = []
    for size in reversed(sparse_shape):
        rows.append(linear % size)
        linear = linear // size
    if not rows:
        return xp.zeros((0, linear.shape[0]), dtype=xp.int64)
    return xp.stack(rows[::-1]).astype(xp.int64, copy=False)


def coalesce(backend, indices, values, sparse_shape):
    """Sorted unique indices and the values of duplicates summed, as ``Tensor.coalesce``."""
    xp = backend.xp
    if indices.shape[1] == 0:
        return indices, values
    linear = linear_index(xp, indices, sparse_shape)
    unique, inverse = xp.unique(linear, return_inverse=True)
    if unique.shape[0] == linear.shape[0] and bool(xp.all(linear[1:] > linear[:-1])):
        return indices, values  # already sorted and unique: keep the arrays
    summed = xp.zeros((unique.shape[0],) + values.shape[1:], dtype=values.dtype)
    backend.index_add(summed, inverse.reshape(-1), values)
    return unravel(xp, unique, sparse_shape), summed


def coalesced_indices(backend, indices, sparse_shape):
    """The index pattern ``coalesce`` would give, without summing any values."""
    xp = backend.xp
    if indices.shape[1] == 0:
        return indices
    unique = xp.unique(linear_index(xp, indices, sparse_shape))
    return unravel(xp, unique, sparse_shape)


def lookup(backend, indices, values, sparse_shape, wanted):
    """The values stored at index columns ``wanted`` (zero where absent); ``indices`` must be
    coalesced (sorted, unique), as a gradient's are."""
    xp = backend.xp
    out = xp.zeros((wanted.shape[1],) + values.shape[1:], dtype=values.dtype)
    if indices.shape[1] == 0 or wanted.shape[1] == 0:
        return out
    keys = linear_index(xp, indices, sparse_shape)
    targets = linear_index(xp, wanted, sparse_shape)
    pos = xp.clip(xp.searchsorted(keys, targets), 0, keys.shape[0] - 1)
    found = keys[pos] == targets
    out[found] = values[pos[found]]
    return out


def to_dense(backend, indices, values, shape):
    """A dense array of ``shape`` with ``values`` added in at ``indices`` (duplicates sum)."""
    xp = backend.xp
    out = xp.zeros(shape, dtype=values.dtype)
    if indices.shape[1]:
        backend.index_add(out, tuple(indices), values)
    return out


def csr_rows(xp, crow):
    """The row of every stored element of a CSR matrix (COO's first index row)."""
    counts = xp.diff(crow)
    return xp.repeat(xp.arange(crow.shape[0] - 1, dtype=xp.int64), counts)


def rows_to_crow(xp, rows, nrows):
    """CSR's compressed row pointer from the sorted row index of every element."""
    crow = xp.zeros(nrows + 1, dtype=xp.int64)
    crow[1:] = xp.cumsum(xp.bincount(rows, minlength=nrows))
    return crow
