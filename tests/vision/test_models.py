"""``ember.vision.models`` against torchvision 0.28's: every model's ``state_dict`` keys and
shapes, parameter count and outputs (torchvision's weights copied into Ember's model), the
weights enums' data, the registry, and loading checkpoints through ``weights=`` from the hub
cache and from a local HTTP server.

Models are compared with their parameters perturbed away from torchvision's initialisation
(several heads start at zero, which would make any two outputs equal). Train-mode outputs are
compared where they are deterministic (BatchNorm batch statistics; dropout and stochastic
depth set to p=0), on inputs large enough that the last stage's batch statistics are
well-conditioned. Ember's initialisers draw torch's random streams in Python-level NumPy,
which is slow for the ~100M-parameter classifiers, so the biggest models are built only in the
``slow`` tests (the CI runs them reduced: structure and parameter count)."""
import hashlib
import http.server
import io
import os
import threading
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import nn

from torchvision_oracle import import_torchvision

tv = import_torchvision()
models = pytest.importorskip("ember.vision.models")


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    # The oracle's intra-op threads only compete with the other test processes.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _perturbed(tv_model, seed=0):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tv_model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    return tv_model


def _copy_into(em_model, tv_model):
    # load_state_dict copies into the parameters, so the arrays can be shared.
    em_model.load_state_dict({k: ember.from_numpy(v.detach().numpy())
                              for k, v in tv_model.state_dict().items()})


def _build_pair(name, **kwargs):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # googlenet's init_weights notice
        tv_model = _perturbed(getattr(tv.models, name)(**kwargs))
        em_model = getattr(models, name)(**kwargs)
    return tv_model, em_model


def _assert_same_structure(tv_model, em_model):
    tv_sd, em_sd = tv_model.state_dict(), em_model.state_dict()
    assert list(em_sd) == list(tv_sd)
    for key, value in tv_sd.items():
        assert tuple(em_sd[key].shape) == tuple(value.shape), key
        assert str(em_sd[key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key
    assert (sum(p.numel() for p in em_model.parameters())
            == sum(p.numel() for p in tv_model.parameters()))


def _no_dropout(*modules):
    for model in modules:
        for m in model.modules():
            if type(m).__name__ in ("Dropout", "StochasticDepth"):
                m.p = 0.0


def _assert_close_outputs(em_out, tv_out, rtol=1e-4):
    if isinstance(tv_out, tuple):
        assert type(em_out).__name__ == type(tv_out).__name__
        assert len(em_out) == len(tv_out)
        for e, t in zip(em_out, tv_out):
            _assert_close_outputs(e, t, rtol)
        return
    expected = tv_out.detach().numpy()
    actual = em_out.detach().numpy()
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def _compare(tv_model, em_model, size, batch=2, train_size=None):
    _assert_same_structure(tv_model, em_model)
    _copy_into(em_model, tv_model)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 3, size, size), dtype=np.float32)
    tv_model.eval()
    em_model.eval()
    with torch.no_grad():
        expected = tv_model(torch.from_numpy(x))
    with ember.no_grad():
        _assert_close_outputs(em_model(ember.from_numpy(x)), expected)
    if train_size is not None:
        x = rng.standard_normal((4, 3, train_size, train_size), dtype=np.float32)
        _no_dropout(tv_model, em_model)
        tv_model.train()
        em_model.train()
        with torch.no_grad():
            expected = tv_model(torch.from_numpy(x))
        with ember.no_grad():
            _assert_close_outputs(em_model(ember.from_numpy(x)), expected)
        # BatchNorm's running statistics moved identically.
        em_sd = em_model.state_dict()
        for key, value in tv_model.state_dict().items():
            if key.endswith("running_var"):
                np.testing.assert_allclose(em_sd[key].numpy(), value.numpy(), rtol=1e-4,
                                           atol=1e-5)


# (builder, input size for eval, input size for the train-mode comparison or None). The CI
# set covers every family once; the slow set adds the other sizes of each.
CASES = [
    ("resnet18", 32, 64), ("resnet50", 32, None), ("resnext50_32x4d", 32, None),
    ("alexnet", 63, None), ("squeezenet1_1", 32, 32),
    ("mobilenet_v2", 32, None), ("mobilenet_v3_small", 32, 64), ("mobilenet_v3_large", 32, None),
    ("efficientnet_b0", 32, None), ("shufflenet_v2_x1_0", 32, None),
    ("regnet_y_400mf", 32, 64), ("convnext_tiny", 32, None),
]
SLOW_CASES = ["resnet34", "resnet101", "resnet152", "wide_resnet50_2", "resnext101_32x8d",
              "vgg11", "vgg16", "vgg16_bn", "squeezenet1_0", "densenet161", "efficientnet_b3",
              "convnext_small", "swin_s", "regnet_x_400mf", "regnet_y_1_6gf",
              "shufflenet_v2_x0_5", "mobilenet_v3_large"]


@pytest.mark.parametrize("name,size,train_size", CASES, ids=[c[0] for c in CASES])
def test_model_matches_torchvision(name, size, train_size):
    tv_model, em_model = _build_pair(name)
    _compare(tv_model, em_model, size, batch=1, train_size=train_size)


def test_swin_t_matches_torchvision():
    # The 32x32 input leaves 8x8, 4x4, 2x2 and 1x1 maps: padded windows, and shifts skipped
    # where one window covers the map, are both exercised.
    tv_model, em_model = _build_pair("swin_t")
    _compare(tv_model, em_model, 32, batch=1)


def test_small_swin_shifted_windows_match_torchvision():
    # A window smaller than the map, so the shifted blocks roll and mask.
    kwargs = dict(patch_size=[2, 2], embed_dim=8, depths=[2, 2], num_heads=[2, 2],
                  window_size=[3, 3], num_classes=5)
    tv_model = _perturbed(tv.models.SwinTransformer(**kwargs))
    em_model = models.SwinTransformer(**kwargs)
    _compare(tv_model, em_model, 14, train_size=14)


def test_vision_transformer_matches_torchvision():
    kwargs = dict(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=16,
                  mlp_dim=32, num_classes=10)
    tv_model = _perturbed(tv.models.VisionTransformer(**kwargs))
    em_model = models.VisionTransformer(**kwargs)
    _compare(tv_model, em_model, 32, train_size=32)
    kwargs["representation_size"] = 12
    tv_model = _perturbed(tv.models.VisionTransformer(**kwargs))
    em_model = models.VisionTransformer(**kwargs)
    _compare(tv_model, em_model, 32)
    with pytest.raises(ValueError, match="Wrong image height! Expected 32 but got 48!"):
        em_model(ember.zeros(1, 3, 48, 32))


def test_vit_b_16_structure_matches_torchvision():
    with torch.device("meta"):
        tv_model = tv.models.vit_b_16()
    em_model = models.vit_b_16()
    assert list(em_model.state_dict()) == list(tv_model.state_dict())
    for key, value in tv_model.state_dict().items():
        assert tuple(em_model.state_dict()[key].shape) == tuple(value.shape), key
    assert (sum(p.numel() for p in em_model.parameters())
            == models.ViT_B_16_Weights.DEFAULT.meta["num_params"])


def test_vgg11_bn_matches_torchvision(monkeypatch):
    # The 25088x4096 classifier would be initialised twice per library; fill it once instead.
    monkeypatch.setattr(torch.nn.Linear, "reset_parameters", lambda self: None)
    monkeypatch.setattr(nn.Linear, "reset_parameters", lambda self: None)
    tv_model = tv.models.vgg11_bn(init_weights=False)
    with torch.no_grad():
        for p in tv_model.parameters():
            p.copy_(torch.randn(p.shape) * 0.02)
    em_model = models.vgg11_bn(init_weights=False)
    _compare(tv_model, em_model, 32, train_size=32)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW_CASES)
def test_more_models_match_torchvision(name):
    tv_model, em_model = _build_pair(name)
    _compare(tv_model, em_model, 32, batch=1)


@pytest.mark.slow
def test_dilated_resnet50_matches_torchvision():
    tv_model, em_model = _build_pair("resnet50", replace_stride_with_dilation=[False, True, True])
    _compare(tv_model, em_model, 32, batch=1)


def test_resnet18_gradients_match_torchvision():
    # Train mode, on an input whose last stage's batch statistics are well-conditioned.
    tv_model, em_model = _build_pair("resnet18", num_classes=7)
    _copy_into(em_model, tv_model)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 64, 64), dtype=np.float32)
    target = np.array([1, 5, 0, 6])
    tv_loss = torch.nn.functional.cross_entropy(tv_model(torch.from_numpy(x)),
                                                torch.from_numpy(target))
    tv_loss.backward()
    em_loss = nn.functional.cross_entropy(em_model(ember.from_numpy(x)),
                                          ember.from_numpy(target))
    em_loss.backward()
    np.testing.assert_allclose(em_loss.item(), tv_loss.item(), rtol=1e-5)
    em_params = dict(em_model.named_parameters())
    for key, p in tv_model.named_parameters():
        expected = p.grad.numpy()
        scale = max(1e-3, float(np.abs(expected).max()))
        np.testing.assert_allclose(em_params[key].grad.numpy(), expected, rtol=0,
                                   atol=2e-4 * scale, err_msg=key)


def test_googlenet_aux_outputs_and_transform_input():
    tv_model, em_model = _build_pair("googlenet", transform_input=True, init_weights=False)
    _copy_into(em_model, tv_model)
    _assert_same_structure(tv_model, em_model)
    x = np.random.default_rng(2).standard_normal((4, 3, 64, 64), dtype=np.float32)
    _no_dropout(tv_model, em_model)
    with torch.no_grad():
        expected = tv_model(torch.from_numpy(x))
    out = em_model(ember.from_numpy(x))
    assert isinstance(out, models.GoogLeNetOutputs) and out._fields == expected._fields
    _assert_close_outputs(out, expected)
    em_model.eval()
    assert isinstance(em_model(ember.from_numpy(x[:1])), ember.Tensor)


def test_builder_options_match_torchvision():
    for name, kwargs in [("resnet18", dict(num_classes=10, zero_init_residual=True)),
                         ("mobilenet_v3_large", dict(width_mult=0.75, reduced_tail=True,
                                                     dilated=True)),
                         ("mobilenet_v2", dict(width_mult=0.5, num_classes=3))]:
        tv_model, em_model = _build_pair(name, **kwargs)
        _compare(tv_model, em_model, 32, batch=1)
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        models.resnet18(groups=2)
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 2_0"):
        models.SqueezeNet("2_0")


def test_densenet121_memory_efficient_matches_torchvision():
    tv_model, em_model = _build_pair("densenet121", memory_efficient=True, num_classes=3)
    _assert_same_structure(tv_model, em_model)
    _copy_into(em_model, tv_model)
    tv_model.eval()
    em_model.eval()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 32, 32), dtype=np.float32)
    w = rng.standard_normal((2, 3), dtype=np.float32)
    (tv_model(torch.from_numpy(x)) * torch.from_numpy(w)).sum().backward()
    out = em_model(ember.from_numpy(x))
    with torch.no_grad():
        _assert_close_outputs(out, tv_model(torch.from_numpy(x)))
    (out * ember.from_numpy(w)).sum().backward()
    # The bottleneck recomputed in backward gives the gradients of the plain forward.
    grad = em_model.features.denseblock1.denselayer1.conv1.weight.grad.numpy()
    expected = tv_model.features.denseblock1.denselayer1.conv1.weight.grad.numpy()
    np.testing.assert_allclose(grad, expected, rtol=0, atol=1e-4 * np.abs(expected).max())


# ---- weights enums and the registry ------------------------------------------------------

def _tv_weight_enums():
    return {name: getattr(tv.models, name) for name in dir(tv.models)
            if name.endswith("_Weights") and hasattr(models, name)}


def test_weights_enums_carry_torchvision_data():
    enums = _tv_weight_enums()
    assert len(enums) >= 60
    for name, tv_enum in enums.items():
        em_enum = getattr(models, name)
        assert list(em_enum.__members__) == list(tv_enum.__members__), name
        for member, tv_w in tv_enum.__members__.items():
            em_w = em_enum[member]
            assert em_w.name == tv_w.name and repr(em_w) == repr(tv_w)
            assert em_w.url == tv_w.url
            assert repr(em_w.meta) == repr(tv_w.meta), f"{name}.{member}"
            assert em_w.transforms.func.__name__ == tv_w.transforms.func.__name__
            em_kw = {k: getattr(v, "value", v) for k, v in em_w.transforms.keywords.items()}
            tv_kw = {k: getattr(v, "value", v) for k, v in tv_w.transforms.keywords.items()}
            assert em_kw == tv_kw, f"{name}.{member}"


def test_registry_matches_torchvision():
    ours = set(models.list_models())
    theirs = set(tv.models.list_models(module=tv.models))
    missing = set(models._MISSING_MODELS)
    assert ours == theirs - missing
    assert models.list_models(include="resnet*", exclude="*50*") == [
        "resnet101", "resnet152", "resnet18", "resnet34"]
    assert models.get_model_weights("resnet50") is models.ResNet50_Weights
    assert models.get_model_weights(models.swin_t) is models.Swin_T_Weights
    assert models.get_weight("ResNet50_Weights.DEFAULT") is models.ResNet50_Weights.IMAGENET1K_V2
    assert models.get_model("regnet_y_400mf", num_classes=5).fc.out_features == 5
    with pytest.raises(ValueError, match="Unknown model nope"):
        models.get_model("nope")
    with pytest.raises(ValueError, match="Invalid weight name provided: 'ResNet50'"):
        models.get_weight("ResNet50")
    for name in ("resnet18", "vit_b_16", "convnext_tiny"):
        em_params = list(__import__("inspect").signature(getattr(models, name)).parameters)
        tv_params = list(__import__("inspect").signature(getattr(tv.models, name)).parameters)
        assert em_params == tv_params


def test_weights_verify_and_errors():
    assert models.ResNet18_Weights.verify("IMAGENET1K_V1") is models.ResNet18_Weights.DEFAULT
    assert (models.ResNet18_Weights.verify("ResNet18_Weights.IMAGENET1K_V1")
            is models.ResNet18_Weights.IMAGENET1K_V1)
    assert models.ResNet18_Weights.verify(None) is None
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received "
                                        "ResNet50_Weights"):
        models.resnet18(weights=models.ResNet50_Weights.DEFAULT)
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 1000 but "
                                         "got 10 instead."):
        models.resnet18(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="No weights available for model vit_h_14"):
        models.vit_h_14(pretrained=True)
    import copy
    import pickle
    w = models.EfficientNet_B3_Weights.DEFAULT
    assert copy.deepcopy(w) is w and pickle.loads(pickle.dumps(w)) is w


def test_inference_preset_matches_torchvision():
    weights = models.EfficientNet_B1_Weights.DEFAULT
    tv_weights = tv.models.EfficientNet_B1_Weights.DEFAULT
    preset, tv_preset = weights.transforms(), tv_weights.transforms()
    assert repr(preset) == repr(tv_preset) and preset.describe() == tv_preset.describe()
    x = np.random.default_rng(4).random((2, 3, 270, 250), dtype=np.float32)
    out = preset(ember.from_numpy(x))
    expected = tv_preset(torch.from_numpy(x))
    assert out.dtype == ember.float32 and tuple(out.shape) == (2, 3, 240, 240)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=2e-4)
    from PIL import Image
    image = Image.fromarray((x[0].transpose(1, 2, 0) * 255).astype(np.uint8))
    preset = models.ResNet50_Weights.DEFAULT.transforms()
    np.testing.assert_allclose(
        preset(image).numpy(), tv.models.ResNet50_Weights.DEFAULT.transforms()(image).numpy(),
        atol=1e-5)


# ---- loading checkpoints through weights= ------------------------------------------------

@pytest.fixture
def torch_home(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    checkpoints = tmp_path / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    return checkpoints


def _torchvision_checkpoint():
    torch.manual_seed(5)
    tv_model = _perturbed(tv.models.resnet18(), seed=5).eval()
    buffer = io.BytesIO()
    torch.save(tv_model.state_dict(), buffer)
    return tv_model, buffer.getvalue()


def _assert_same_predictions(em_model, tv_model):
    x = np.random.default_rng(6).standard_normal((2, 3, 32, 32), dtype=np.float32)
    with torch.no_grad():
        expected = tv_model(torch.from_numpy(x))
    with ember.no_grad():
        _assert_close_outputs(em_model.eval()(ember.from_numpy(x)), expected)


def test_weights_load_a_torchvision_checkpoint_from_the_cache(torch_home, capsys):
    tv_model, data = _torchvision_checkpoint()
    (torch_home / "resnet18-f37072fd.pth").write_bytes(data)
    _assert_same_predictions(models.resnet18(weights=models.ResNet18_Weights.IMAGENET1K_V1),
                             tv_model)
    _assert_same_predictions(models.get_model("resnet18", weights="DEFAULT"), tv_model)
    assert "Downloading" not in capsys.readouterr().out


def test_legacy_pretrained_keyword(torch_home):
    tv_model, data = _torchvision_checkpoint()
    (torch_home / "resnet18-f37072fd.pth").write_bytes(data)
    with pytest.warns(UserWarning) as record:
        em_model = models.resnet18(pretrained=True)
    messages = [str(w.message) for w in record]
    assert ("The parameter 'pretrained' is deprecated since 0.13 and may be removed in the "
            "future, please use 'weights' instead." in messages)
    assert any("`weights=ResNet18_Weights.IMAGENET1K_V1`" in m
               and "`weights=ResNet18_Weights.DEFAULT`" in m for m in messages)
    _assert_same_predictions(em_model, tv_model)
    with pytest.warns(UserWarning) as record:
        assert models.resnet18(pretrained=False).fc.out_features == 1000
    assert any("equivalent to passing `weights=None`" in str(w.message) for w in record)
    with pytest.warns(UserWarning, match="Using 'weights' as positional parameter"):
        models.squeezenet1_1(None)


class _Server:
    def __init__(self, files):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = files.get(self.path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def test_weights_download_with_hash_check(torch_home, monkeypatch):
    tv_model, data = _torchvision_checkpoint()
    good_name = f"resnet18-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    weights = models.ResNet18_Weights.IMAGENET1K_V1
    with _Server({f"/models/{good_name}": data, "/models/resnet18-f37072fd.pth": data}) as server:
        # The real URL's file name: its hash prefix does not match these bytes.
        monkeypatch.setattr(weights.value, "url", f"{server.url}/models/resnet18-f37072fd.pth")
        with pytest.raises(RuntimeError, match="invalid hash value"):
            models.resnet18(weights=weights, progress=False)
        assert os.listdir(torch_home) == []
        monkeypatch.setattr(weights.value, "url", f"{server.url}/models/{good_name}")
        em_model = models.resnet18(weights=weights, progress=False)
    assert os.listdir(torch_home) == [good_name]
    _assert_same_predictions(em_model, tv_model)
