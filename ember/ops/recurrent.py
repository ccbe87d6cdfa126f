"""One direction of one recurrent layer (Elman RNN, LSTM, GRU) over a whole sequence, as one op.

The input projection of every step (``x @ W_ih^T + b_ih``) is a single matrix product made by
the caller; this op runs the recurrence. Written as a chain of generic ops, a 64-step LSTM
records some 600 autograd nodes and its backward allocates a gradient per node; here the
forward loop works on backend arrays, keeps what the backward needs (activated gates, cell
states, previous hidden states), and one node runs back-propagation through time in a second
array loop. Only the hidden projection runs per step in both directions: the weight gradients
are one matrix product each over all steps after the loop.

Packed sequences need no special path: the op takes the input rows of all steps stacked
time-major, with step ``t`` holding the first ``batch_sizes[t]`` batch entries (a padded batch
is the case where every step holds all ``B``). Entries that ended keep their state, which is
then their final state.

Under ``create_graph`` the backward recomputes the layer with ordinary differentiable Ember ops
and differentiates that, so higher-order gradients are exact too.
"""
import itertools

from .. import _dtype as dt
from ._dispatch import Node, needs_grad, record_multi, _wrap, device_mismatch, dtype_name
from ..autograd.grad_mode import _state as _grad_state

__all__ = ["rnn_layer"]

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _sigmoid_(xp, a):
    # 1/(1+exp(-x)) == (1 + tanh(x/2))/2: one transcendental call, no overflow, in place.
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5


def _dsigmoid_(xp, out, s, a, b):
    # s (1 - s) a b, with s = sigmoid(x): a gate's gradient through its sigmoid.
    xp.subtract(1, s, out=out)
    out *= s
    out *= a
    out *= b


def _dtanh_(xp, out, t, *factors):
    # (1 - t^2) times the factors, with t = tanh(x).
    xp.multiply(t, t, out=out)
    xp.subtract(1, out, out=out)
    for f in factors:
        out *= f


def _steps(batch_sizes):
    """(rows, first row) of each step in the time-major stacked layout."""
    offsets = [0, *itertools.accumulate(batch_sizes)]
    return list(batch_sizes), offsets


def _forward_steps(order, sizes, offsets, acts, h, hprev):
    """Each step in ``order`` as (rows, first row, end row, its rows of ``acts``, the previous
    hidden state), that state saved into ``hprev`` for the backward."""
    for t in order:
        n, lo = sizes[t], offsets[t]
        hi = lo + n
        hp = h[:n]
        hprev[lo:hi] = hp
        yield n, lo, hi, acts[lo:hi], hp


def _backward_steps(order, sizes, offsets, dh, g_out):
    """Each step, last to first, as (rows, first row, end row, dh_t): ``dh_t`` is the step's
    rows of ``dh``, which the loop body of the later step has just filled with the gradient it
    carries back, plus the output's own gradient at this step."""
    for t in reversed(order):
        n, lo = sizes[t], offsets[t]
        hi = lo + n
        dht = dh[:n]
        if g_out is not None:
            dht += g_out[lo:hi]
        yield n, lo, hi, dht


def _work_arrays(work, *tensors):
    """The tensors' arrays in the ``work`` dtype (None stays None)."""
    return [None if t is None else t._data.astype(work, copy=False) for t in tensors]


# ---- forward loops on arrays ----------------------------------------------------------------

def _forward_rnn(backend, mode, gx, h0, w_hh, b_hh, sizes, offsets, order):
    xp = backend.xp
    acts = gx + b_hh if b_hh is not None else gx.copy()
    w_t = xp.ascontiguousarray(w_hh.T)
    h = h0.copy()
    hprev = xp.empty((gx.shape[0], h0.shape[1]), dtype=gx.dtype)
    for n, lo, hi, a, hp in _forward_steps(order, sizes, offsets, acts, h, hprev):
        backend.matmul_into(a, hp, w_t, accumulate=True)
        if mode == "RNN_TANH":
            xp.tanh(a, out=a)
        else:
            xp.maximum(a, 0, out=a)
        h[:n] = a
    # The activations are the output; the node keeps its own copy so that an in-place change
    # of the returned output cannot corrupt the backward.
    return acts.copy(), h, None, {"acts": acts, "hprev": hprev}


def _forward_lstm(backend, gx, h0, c0, w_hh, b_hh, w_hr, sizes, offsets, order):
    xp = backend.xp
    N, G = gx.shape
    H = G // 4
    P = h0.shape[1]
    acts = gx + b_hh if b_hh is not None else gx.copy()
    # BLAS multiplies by a transposed (Fortran-ordered) weight about 30% slower at these sizes.
    w_t = xp.ascontiguousarray(w_hh.T)
    hr_t = w_hr.T if w_hr is not None else None
    h, c = h0.copy(), c0.copy()
    out = xp.empty((N, P), dtype=gx.dtype)
    hprev = xp.empty((N, P), dtype=gx.dtype)
    cprev = xp.empty((N, H), dtype=gx.dtype)
    tcs = xp.empty((N, H), dtype=gx.dtype)      # tanh(c_t)
    rs = xp.empty((N, H), dtype=gx.dtype) if w_hr is not None else None  # before projection
    for n, lo, hi, a, hp in _forward_steps(order, sizes, offsets, acts, h, hprev):
        cp = c[:n]
        cprev[lo:hi] = cp
        backend.matmul_into(a, hp, w_t, accumulate=True)
        _sigmoid_(xp, a[:, :2 * H])
        _sigmoid_(xp, a[:, 3 * H:])
        g = a[:, 2 * H:3 * H]
        xp.tanh(g, out=g)
        cp *= a[:, H:2 * H]
        cp += a[:, :H] * g             # c[:n] now holds c_t
        tc = tcs[lo:hi]
        xp.tanh(cp, out=tc)
        if hr_t is None:
            hn = out[lo:hi]
            xp.multiply(a[:, 3 * H:], tc, out=hn)
        else:
            r = rs[lo:hi]
            xp.multiply(a[:, 3 * H:], tc, out=r)
            hn = out[lo:hi]
            backend.matmul_into(hn, r, hr_t)
        h[:n] = hn
    return out, h, c, {"acts": acts, "hprev": hprev, "cprev": cprev, "tcs": tcs, "rs": rs}


def _forward_gru(backend, gx, h0, w_hh, b_hh, sizes, offsets, order):
    xp = backend.xp
    N, G = gx.shape
    H = G // 3
    acts = gx.copy()
    if b_hh is not None:  # the n gate's hidden bias sits inside r * (W_hn h + b_hn)
        acts[:, :2 * H] += b_hh[:2 * H]
        b_hn = b_hh[2 * H:]
    w_t = xp.ascontiguousarray(w_hh.T)
    h = h0.copy()
    out = xp.empty((N, H), dtype=gx.dtype)
    hprev = xp.empty((N, H), dtype=gx.dtype)
    ghn_all = xp.empty((N, H), dtype=gx.dtype)  # W_hn h + b_hn
    for n, lo, hi, a, hp in _forward_steps(order, sizes, offsets, acts, h, hprev):
        gh = hp @ w_t
        rz = a[:, :2 * H]
        rz += gh[:, :2 * H]
        _sigmoid_(xp, rz)
        ghn = ghn_all[lo:hi]
        if b_hh is not None:
            xp.add(gh[:, 2 * H:], b_hn, out=ghn)
        else:
            ghn[...] = gh[:, 2 * H:]
        nn = a[:, 2 * H:]
        nn += a[:, :H] * ghn
        xp.tanh(nn, out=nn)
        hn = out[lo:hi]
        xp.subtract(hp, nn, out=hn)
        hn *= a[:, H:2 * H]
        hn += nn                        # (1 - z) * n + z * h
        h[:n] = hn
    return out, h, None, {"acts": acts, "hprev": hprev, "ghn": ghn_all}


# ---- backward loops on arrays -----------------------------------------------------------------

def _backward_rnn(backend, mode, cache, g_out, dh, w_hh, sizes, offsets, order):
    xp = backend.xp
    acts = cache["acts"]
    dgates = xp.empty_like(acts)
    for n, lo, hi, dht in _backward_steps(order, sizes, offsets, dh, g_out):
        y = acts[lo:hi]
        d = dgates[lo:hi]
        if mode == "RNN_TANH":
            _dtanh_(xp, d, y, dht)
        else:
            xp.multiply(dht, y > 0, out=d)
        backend.matmul_into(dht, d, w_hh)
    return dgates, dgates, dh, None, None


def _backward_lstm(backend, cache, g_out, dh, dc, w_hh, w_hr, sizes, offsets, order):
    xp = backend.xp
    acts, cprev, tcs, rs = cache["acts"], cache["cprev"], cache["tcs"], cache["rs"]
    H = tcs.shape[1]
    dgates = xp.empty_like(acts)
    dhs = xp.empty((acts.shape[0], dh.shape[1]), dtype=acts.dtype) if w_hr is not None else None
    for n, lo, hi, dht in _backward_steps(order, sizes, offsets, dh, g_out):
        if w_hr is not None:
            dhs[lo:hi] = dht
            dr = dht @ w_hr
        else:
            dr = dht
        a = acts[lo:hi]
        i, f, g, o = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
        tc = tcs[lo:hi]
        d = dgates[lo:hi]
        di, df, dg, do = d[:, :H], d[:, H:2 * H], d[:, 2 * H:3 * H], d[:, 3 * H:]
        # dc_t = dc_{t+1} * f_{t+1} (carried) + dh_t * o * (1 - tanh(c_t)^2)
        _dtanh_(xp, do, tc, o, dr)
        dct = dc[:n]
        dct += do
        # the output gate: dh_t * tanh(c_t) * o * (1 - o)
        _dsigmoid_(xp, do, o, tc, dr)
        _dsigmoid_(xp, di, i, g, dct)
        _dsigmoid_(xp, df, f, cprev[lo:hi], dct)
        _dtanh_(xp, dg, g, i, dct)
        dct *= f
        backend.matmul_into(dht, d, w_hh)
    g_hr = None
    if w_hr is not None:
        g_hr = (dhs, rs)
    return dgates, dgates, dh, dc, g_hr


def _backward_gru(backend, cache, g_out, dh, w_hh, sizes, offsets, order):
    xp = backend.xp
    acts, hprev, ghn_all = cache["acts"], cache["hprev"], cache["ghn"]
    N, G = acts.shape
    H = G // 3
    dgh = xp.empty_like(acts)        # gradient of the hidden projection W_hh h + b_hh
    dnx = xp.empty((N, H), dtype=acts.dtype)  # gradient of the n gate's input projection
    for n, lo, hi, dht in _backward_steps(order, sizes, offsets, dh, g_out):
        a = acts[lo:hi]
        r, z, nn = a[:, :H], a[:, H:2 * H], a[:, 2 * H:]
        d = dgh[lo:hi]
        dr, dz, dhn = d[:, :H], d[:, H:2 * H], d[:, 2 * H:]
        dn = dnx[lo:hi]
        # n: dh * (1 - z) * (1 - n^2)
        xp.subtract(1, z, out=dr)
        _dtanh_(xp, dn, nn, dr, dht)
        # z: dh * (h_prev - n) * z * (1 - z)
        xp.subtract(hprev[lo:hi], nn, out=dz)
        dz *= dht
        dz *= z
        dz *= dr
        # r: dn * (W_hn h + b_hn) * r * (1 - r)
        _dsigmoid_(xp, dr, r, ghn_all[lo:hi], dn)
        xp.multiply(dn, r, out=dhn)
        dht *= z
        backend.matmul_into(dht, d, w_hh, accumulate=True)
    dgx = dgh.copy()
    dgx[:, 2 * H:] = dnx
    return dgx, dgh, dh, None, None


# ---- the op ---------------------------------------------------------------------------------

class RnnLayerBackward0(Node):
    __slots__ = ()

    def release(self):
        super().release()
        self.__dict__.pop("cache", None)

    def backward(self, g_out, g_hn, g_cn=None):
        gates_x, h0, c0, w_hh, b_hh, w_hr = self.saved_tensors
        if _grad_state.enabled:
            return self._backward_differentiable(g_out, g_hn, g_cn)
        backend = gates_x._backend
        xp = backend.xp
        work = self.work_dtype
        B = h0.shape[0]
        w, go, w_r, gh, gc = _work_arrays(work, w_hh, g_out, w_hr, g_hn, g_cn)
        dh = gh.copy() if gh is not None else xp.zeros((B, h0.shape[1]), dtype=work)
        mode, sizes, offsets, order = self.mode, self.sizes, self.offsets, self.order
        if mode == "LSTM":
            dc = gc.copy() if gc is not None else xp.zeros((B, c0.shape[1]), dtype=work)
            dgx, dgh, dh, dc, hr = _backward_lstm(backend, self.cache, go, dh, dc, w, w_r, sizes,
                                                  offsets, order)
        elif mode == "GRU":
            dgx, dgh, dh, dc, hr = _backward_gru(backend, self.cache, go, dh, w, sizes, offsets,
                                                 order)
        else:
            dgx, dgh, dh, dc, hr = _backward_rnn(backend, mode, self.cache, go, dh, w, sizes,
                                                 offsets, order)
        edges = self._edges

        def out(data, like):
            return _wrap(data.astype(like._dtype.np, copy=False), like._dtype, like)

        g_w_hh = out(dgh.T @ self.cache["hprev"], w_hh) if edges[3] is not None else None
        g_b_hh = out(dgh.sum(0), b_hh) if edges[4] is not None else None
        g_w_hr = out(hr[0].T @ hr[1], w_hr) if edges[5] is not None else None
        return (out(dgx, gates_x) if edges[0] is not None else None,
                out(dh, h0) if edges[1] is not None else None,
                out(dc, c0) if edges[2] is not None else None,
                g_w_hh, g_b_hh, g_w_hr)

    def jvp(self, *tangents):
        # The composed layer's own ops carry the tangents (the saved inputs hold them).
        from ..autograd import forward_ad
        with forward_ad.active():
            outs = _composed(self.mode, *self.saved_tensors, self.sizes, self.offsets,
                             self.order)
        return tuple(o._fw_grad if o is not None else None for o in outs)

    def _backward_differentiable(self, g_out, g_hn, g_cn):
        from ..autograd import grad as autograd_grad
        from ..autograd.grad_mode import enable_grad
        inputs = self.saved_tensors
        with enable_grad():
            outs = _composed(self.mode, *inputs, self.sizes, self.offsets, self.order)
        wanted = [i for i, e in enumerate(self._edges) if e is not None]
        pairs = [(o, g) for o, g in zip(outs, (g_out, g_hn, g_cn))
                 if o is not None and g is not None]
        grads = autograd_grad([o for o, _ in pairs], [inputs[i] for i in wanted],
                              [g for _, g in pairs], create_graph=True, allow_unused=True)
        result = [None] * len(inputs)
        for i, g in zip(wanted, grads):
            result[i] = g
        return tuple(result)


def _composed(mode, gates_x, h0, c0, w_hh, b_hh, w_hr, sizes, offsets, order):
    """The same layer as a chain of differentiable Ember ops (for higher-order gradients)."""
    from .shape import cat
    B = h0.shape[0]
    G = gates_x.shape[1]
    H = G // _GATES[mode]
    h, c = h0, c0
    outs = [None] * len(sizes)
    for t in order:
        n, lo = sizes[t], offsets[t]
        gx = gates_x[lo:lo + n]
        hp = h[:n]
        gh = hp.matmul(w_hh.mT)
        if b_hh is not None:
            gh = gh + b_hh
        if mode == "LSTM":
            gates = gx + gh
            i, f = gates[:, :H].sigmoid(), gates[:, H:2 * H].sigmoid()
            g, o = gates[:, 2 * H:3 * H].tanh(), gates[:, 3 * H:].sigmoid()
            cn = f * c[:n] + i * g
            hn = o * cn.tanh()
            if w_hr is not None:
                hn = hn.matmul(w_hr.mT)
            c = cn if n == B else cat([cn, c[n:]])
        elif mode == "GRU":
            r = (gx[:, :H] + gh[:, :H]).sigmoid()
            z = (gx[:, H:2 * H] + gh[:, H:2 * H]).sigmoid()
            nn = (gx[:, 2 * H:] + r * gh[:, 2 * H:]).tanh()
            hn = (1 - z) * nn + z * hp
        else:
            pre = gx + gh
            hn = pre.tanh() if mode == "RNN_TANH" else pre.relu()
        h = hn if n == B else cat([hn, h[n:]])
        outs[t] = hn
    return cat(outs), h, (c if mode == "LSTM" else None)


def rnn_layer(mode, gates_x, h0, c0, w_hh, b_hh=None, w_hr=None, batch_sizes=None,
              reverse=False):
    """Run one direction of a recurrent layer.

    ``gates_x`` is ``[N, G]``: the input projections ``x @ W_ih^T + b_ih`` of every step,
    stacked time-major; step ``t`` holds the first ``batch_sizes[t]`` (non-increasing) batch
    entries. ``h0`` is ``[B, P]`` (``B = batch_sizes[0]``), ``c0`` (LSTM only) ``[B, H]``.
    ``w_hr`` is the LSTM projection. ``reverse`` runs the steps last to first.

    Returns ``(output [N, P], h_n [B, P], c_n [B, H] or None)``; row ``k`` of ``output`` is the
    hidden state after the step that consumed row ``k`` of ``gates_x``."""
    if mode not in MODES:
        raise ValueError(f"Unrecognized RNN mode: {mode}")
    tensors = (gates_x, h0, c0, w_hh, b_hh, w_hr)
    for t in tensors[1:]:
        if t is not None and t._device is not gates_x._device:
            raise device_mismatch(gates_x, t)
    if (mode == "LSTM") != (c0 is not None):
        raise ValueError("c0 is given exactly when mode is LSTM")
    dtype = gates_x._dtype
    for state in (h0, c0):
        if state is not None and state._dtype is not w_hh._dtype:
            # PyTorch meets the mismatch in its hidden-state matrix product.
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{dtype_name(state._dtype)} and {dtype_name(w_hh._dtype)}")
    # PyTorch's ReLU cell is matrix products and relu, which it runs on integers too
    # (wrapping around on overflow); the other cells need tanh or sigmoid.
    if dtype._kind < 2 and mode != "RNN_RELU":
        raise RuntimeError(f"rnn_layer expects a floating point input, got {dtype}")
    work = dt.float32.np if dtype._kind == 2 and dtype._rank == 0 else dtype.np
    backend = gates_x._backend
    xp = backend.xp
    if batch_sizes is None:
        raise ValueError("batch_sizes is required")
    sizes, offsets = _steps([int(s) for s in batch_sizes])
    order = list(range(len(sizes)))
    if reverse:
        order.reverse()

    gx, h, c, w, b, w_r = _work_arrays(work, gates_x, h0, c0, w_hh, b_hh, w_hr)
    if mode == "LSTM":
        out, hn, cn, cache = _forward_lstm(backend, gx, h, c, w, b, w_r, sizes, offsets, order)
    elif mode == "GRU":
        out, hn, cn, cache = _forward_gru(backend, gx, h, w, b, sizes, offsets, order)
    else:
        out, hn, cn, cache = _forward_rnn(backend, mode, gx, h, w, b, sizes, offsets, order)
    np_dtype = dtype.np
    results = [_wrap(a.astype(np_dtype, copy=False), dtype, gates_x)
               for a in (out, hn, cn) if a is not None]
    if needs_grad(*tensors):
        record_multi(RnnLayerBackward0, tensors, results, save=tensors, mode=mode, sizes=sizes,
                     offsets=offsets, order=order, cache=cache, work_dtype=work)
    if cn is None:
        results.append(None)
    return tuple(results)
