"""``import ember`` loads the tensor library only: ``ember.nn`` and the layer functions torch
exposes at its top level (``torch.conv2d``, ``torch.layer_norm``…) arrive on first use, the
way the other lazy namespaces do. Each check runs in a new interpreter, so that nothing an
earlier test imported hides an eager import."""
import subprocess
import sys


def _run(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_import_ember_does_not_load_nn():
    _run("import sys, ember; assert 'ember.nn' not in sys.modules, 'ember.nn loaded eagerly'; "
         "assert 'ember.nn.functional' not in sys.modules")


def test_nn_arrives_as_attribute_and_as_import():
    _run("import ember; m = ember.nn.Linear(2, 3); assert isinstance(m, ember.nn.Module)\n"
         "import ember.nn as nn; assert nn is ember.nn and nn.functional is ember.nn.functional")
    _run("import ember.nn.functional as F, ember; assert ember.nn.functional is F")


def test_top_level_layer_functions_are_nn_functionals():
    _run("import ember; assert ember.conv2d is ember.nn.functional.conv2d; "
         "assert 'ember.nn' in __import__('sys').modules")
    _run("from ember import layer_norm, kl_div; import ember; "
         "x = ember.ones(2, 3); assert layer_norm(x, (3,)).shape == (2, 3)")


def test_dir_lists_lazy_names_and_hasattr_is_false_for_unknown():
    out = _run("import ember; d = dir(ember); "
               "print(all(n in d for n in ('nn', 'conv2d', 'hub', 'tensor', 'optim'))); "
               "print(hasattr(ember, 'no_such_name'), hasattr(ember, '_no_such_private'))")
    assert out.split() == ["True", "False", "False"]


def test_unknown_name_raises_attribute_error_naming_it():
    out = _run("import ember\ntry:\n    ember.no_such_name\nexcept AttributeError as e:\n"
               "    print(e)")
    assert out.strip() == "module 'ember' has no attribute 'no_such_name'"


def test_compile_back_end_is_lazy():
    _run("import sys, ember; assert 'ember._inductor' not in sys.modules; "
         "assert 'ember._functorch' not in sys.modules\n"
         "from ember._inductor.compile_fx import compile_fx\n"
         "assert ember._inductor.compile_fx.compile_fx is compile_fx; "
         "assert 'ember._functorch.aot_autograd' not in sys.modules")
