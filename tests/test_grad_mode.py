"""Grad modes against PyTorch: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and
``inference_mode`` as context managers and decorators, nesting, generators and threads."""
import threading

import torch

import ember


def compare(fn):
    assert fn(ember) == fn(torch)


def needs_grad_now(lib, x):
    """(does a fresh result require grad, is grad mode on)"""
    return (x * 2).requires_grad, lib.is_grad_enabled()


def test_nested_context_managers():
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        states = [needs_grad_now(lib, x)]
        with lib.no_grad():
            states.append(needs_grad_now(lib, x))
            with lib.enable_grad():
                states.append(needs_grad_now(lib, x))
                with lib.set_grad_enabled(False):
                    states.append(needs_grad_now(lib, x))
                    with lib.set_grad_enabled(True):
                        states.append(needs_grad_now(lib, x))
                    states.append(needs_grad_now(lib, x))
                states.append(needs_grad_now(lib, x))
            states.append(needs_grad_now(lib, x))
        states.append(needs_grad_now(lib, x))
        return states
    compare(fn)


def test_set_grad_enabled_as_a_plain_call():
    def fn(lib):
        states = []
        lib.set_grad_enabled(False)
        states.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        states.append(lib.is_grad_enabled())
        with lib.no_grad():
            lib.set_grad_enabled(True)
            states.append(lib.is_grad_enabled())
        states.append(lib.is_grad_enabled())
        return states
    compare(fn)


def test_context_managers_restore_mode_after_an_exception():
    def fn(lib):
        states = []
        for manager in (lib.no_grad(), lib.set_grad_enabled(False), lib.inference_mode()):
            try:
                with manager:
                    raise KeyError("inside")
            except KeyError:
                states.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        return states
    compare(fn)


def test_decorators_with_and_without_parentheses():
    def fn(lib):
        x = lib.ones(2, requires_grad=True)

        @lib.no_grad()
        def no_grad_called():
            return needs_grad_now(lib, x)

        @lib.no_grad
        def no_grad_bare():
            return needs_grad_now(lib, x)

        @lib.enable_grad()
        def enable_grad_called():
            return needs_grad_now(lib, x)

        @lib.enable_grad
        def enable_grad_bare():
            return needs_grad_now(lib, x)

        @lib.set_grad_enabled(False)
        def grad_disabled():
            return needs_grad_now(lib, x)

        @lib.inference_mode()
        def inference_called():
            return needs_grad_now(lib, x), lib.is_inference_mode_enabled()

        @lib.inference_mode
        def inference_bare():
            return needs_grad_now(lib, x), lib.is_inference_mode_enabled()

        @lib.inference_mode(False)
        def inference_off():
            return needs_grad_now(lib, x), lib.is_inference_mode_enabled()

        results = [no_grad_called(), no_grad_bare(), grad_disabled(), lib.is_grad_enabled(),
                   inference_called(), inference_bare(), inference_off()]
        with lib.no_grad():
            results += [enable_grad_called(), enable_grad_bare(), inference_off()]
        results.append((no_grad_called.__name__, inference_bare.__name__))
        return results
    compare(fn)


def test_decorated_generator_applies_the_mode_while_it_runs():
    def fn(lib):
        @lib.no_grad()
        def generate():
            received = yield lib.is_grad_enabled()
            yield lib.is_grad_enabled(), received

        gen = generate()
        first = next(gen)
        between = lib.is_grad_enabled()
        second = gen.send("sent")
        return first, between, second, lib.is_grad_enabled()
    compare(fn)


def test_inference_mode_states():
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        states = []
        with lib.inference_mode():
            states.append((needs_grad_now(lib, x), lib.is_inference_mode_enabled()))
            with lib.inference_mode(False):
                states.append((needs_grad_now(lib, x), lib.is_inference_mode_enabled()))
            with lib.enable_grad():
                states.append(lib.is_inference_mode_enabled())
        with lib.no_grad():
            with lib.inference_mode(False):
                states.append((needs_grad_now(lib, x), lib.is_inference_mode_enabled()))
        states.append((needs_grad_now(lib, x), lib.is_inference_mode_enabled()))
        return states
    compare(fn)


def test_grad_mode_is_per_thread():
    def fn(lib):
        seen = []

        def worker():
            x = lib.ones(2, requires_grad=True)
            seen.append(needs_grad_now(lib, x))
            with lib.no_grad():
                seen.append(lib.is_grad_enabled())

        with lib.no_grad():
            thread = threading.Thread(target=worker)
            thread.start()
            thread.join()
            seen.append(lib.is_grad_enabled())
        seen.append(lib.is_grad_enabled())
        return seen
    compare(fn)


def test_results_made_under_no_grad_are_leaves_and_in_place_keeps_leaf():
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            y = x * 2
            x.mul_(2)
        return y.requires_grad, y.is_leaf, y.grad_fn, x.requires_grad, x.is_leaf
    compare(fn)


def test_enable_grad_inside_no_grad_builds_a_graph():
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            with lib.enable_grad():
                y = (x * 3).sum()
        y.backward()
        return y.requires_grad, x.grad.tolist()
    compare(fn)


def test_decorating_with_set_grad_enabled_leaves_the_mode_unchanged():
    def fn(lib):
        states = []
        decorator = lib.set_grad_enabled(False)
        states.append(lib.is_grad_enabled())
        wrapped = decorator(lambda: lib.is_grad_enabled())
        states.append(lib.is_grad_enabled())
        states.append(wrapped())
        states.append(lib.is_grad_enabled())
        return states
    compare(fn)
