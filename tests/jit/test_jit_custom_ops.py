"""A traced graph that calls a custom operator (``ember.library.custom_op``) saves and loads:
the op is stored by its ``ns::name`` and found in the loading process's registry, as
TorchScript needs the op's library loaded; a process without it gets a clear error."""
import subprocess
import sys
import textwrap

import numpy as np

import ember

_LIBRARY = textwrap.dedent('''
    import ember

    @ember.library.custom_op("jitsave::scale_add", mutates_args=())
    def scale_add(x: ember.Tensor, y: ember.Tensor, alpha: float) -> ember.Tensor:
        return x * alpha + y

    @scale_add.register_fake
    def _(x, y, alpha):
        return ember.empty_like(x)
''')


class _Model(ember.nn.Module):
    def forward(self, x):
        return ember.ops.jitsave.scale_add(x, x.sin(), 2.0).relu()


def _load_in_child(path, register):
    code = (_LIBRARY if register else "import ember\n") + textwrap.dedent(f'''
        import numpy as np
        m = ember.jit.load({str(path)!r})
        x = ember.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
        print(m(x).numpy().tolist())
    ''')
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_a_graph_with_a_custom_op_saves_and_loads(tmp_path):
    exec(_LIBRARY, {})
    x = ember.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    traced = ember.jit.trace(_Model(), (x,))
    assert any("scale_add" in str(n.target) for n in traced.graph.nodes)
    path = tmp_path / "custom.pt"
    ember.jit.save(traced, str(path))
    want = _Model()(x).numpy()
    np.testing.assert_allclose(ember.jit.load(str(path))(x).numpy(), want, rtol=1e-6)

    done = _load_in_child(path, register=True)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(eval(done.stdout.strip().splitlines()[-1]), want, rtol=1e-6)

    done = _load_in_child(path, register=False)
    assert done.returncode != 0
    assert "custom operator 'jitsave::scale_add' is not registered in this process" in done.stderr
