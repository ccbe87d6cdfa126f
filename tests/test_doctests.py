"""Every example in Ember's docstrings runs and prints what it says (doctest)."""
import doctest
import importlib
import pkgutil

import pytest

import ember


def _modules_with_examples():
    finder = doctest.DocTestFinder()
    names = [ember.__name__] + [m.name for m in pkgutil.walk_packages(ember.__path__, "ember.")]
    for name in sorted(names):
        module = importlib.import_module(name)
        tests = [t for t in finder.find(module, name) if t.examples]
        if tests:
            yield name


MODULES = list(_modules_with_examples())


def test_some_docstrings_have_examples():
    assert len(MODULES) >= 6


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS,
                                          raise_on_error=False, verbose=False)
    assert attempted > 0
    assert failures == 0, f"{failures} of {attempted} examples in {name} failed (see output)"
