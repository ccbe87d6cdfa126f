"""``ember.hub`` against ``torch.hub``, over a real HTTP server on 127.0.0.1: downloads, the
cache, hash checks, progress output, interrupted downloads, errors, ``hubconf.py`` loading from a
folder and from a (locally served) GitHub archive."""
import hashlib
import http.client
import http.server
import io
import json
import os
import sys
import threading
import urllib.error
import zipfile

import numpy as np
import pytest
import torch
import torch.hub

import ember
from ember import hub


class _Server:
    """Serves ``files`` (path -> bytes); ``/drop/...`` paths announce their full length but
    send only half of it, then close the connection; pages after the first of a paged listing
    are empty. Counts the requests per path."""

    def __init__(self):
        self.files = {}
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                path, _, query = self.path.partition("?")
                body = server.files.get(path)
                if body is not None and "page=" in query and "page=1" not in query.split("&"):
                    body = b"[]"  # a listing of the GitHub API fits on its first page
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if path.startswith("/drop/"):
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def count(self, path):
        return sum(1 for p in self.requests if p.split("?")[0] == path)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def torch_home(tmp_path, monkeypatch):
    """A private TORCH_HOME, for both libraries (neither caches a set_dir here)."""
    home = tmp_path / "torch_home"
    monkeypatch.setenv("TORCH_HOME", str(home))
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    return home


def _leftovers(folder):
    return sorted(os.listdir(folder)) if os.path.exists(folder) else []


def _payload(n=300_000):
    return np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8).tobytes()


# ---- cache directory -----------------------------------------------------------------------

def test_get_dir_follows_torch_home_and_xdg(monkeypatch, tmp_path):
    assert hub.get_dir() == torch.hub.get_dir() == os.path.join(os.environ["TORCH_HOME"], "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert hub.get_dir() == torch.hub.get_dir() == os.path.expanduser("~/.cache/torch/hub")
    hub.set_dir("~/somewhere")
    torch.hub.set_dir("~/somewhere")
    assert hub.get_dir() == torch.hub.get_dir() == os.path.expanduser("~/somewhere")


def test_lazy_namespace_keeps_import_fast():
    import subprocess
    code = ("import sys, ember; assert 'urllib.request' not in sys.modules; "
            "assert 'ember.hub' not in sys.modules; ember.hub.get_dir; "
            "import ember.hub; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


# ---- download_url_to_file ------------------------------------------------------------------

def test_download_matches_torch_and_checks_hash(server, tmp_path):
    body = _payload()
    server.files["/blob.bin"] = body
    digest = hashlib.sha256(body).hexdigest()
    for lib, name in ((torch.hub, "t.bin"), (hub, "e.bin")):
        lib.download_url_to_file(server.url + "/blob.bin", str(tmp_path / name),
                                 hash_prefix=digest[:10], progress=False)
    assert (tmp_path / "e.bin").read_bytes() == (tmp_path / "t.bin").read_bytes() == body
    assert _leftovers(tmp_path) == ["e.bin", "t.bin"]  # no .partial file stays behind


def test_hash_mismatch_raises_and_leaves_no_file(server, tmp_path):
    server.files["/blob.bin"] = body = _payload()
    errors = []
    for lib, name in ((torch.hub, "t.bin"), (hub, "e.bin")):
        with pytest.raises(RuntimeError) as info:
            lib.download_url_to_file(server.url + "/blob.bin", str(tmp_path / name),
                                     hash_prefix="0123abcd", progress=False)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert errors[1] == ('invalid hash value (expected "0123abcd", got '
                         f'"{hashlib.sha256(body).hexdigest()}")')
    assert _leftovers(tmp_path) == []


def test_dropped_connection_leaves_no_partial_file(server, tmp_path):
    # torch.hub keeps the truncated file here (http.client's read(n) reports a dropped
    # connection as the end of the body); Ember compares with Content-Length and raises.
    server.files["/drop/blob.bin"] = body = _payload()
    with pytest.raises(http.client.IncompleteRead) as info:
        hub.download_url_to_file(server.url + "/drop/blob.bin", str(tmp_path / "e.bin"),
                                 progress=False)
    assert info.value.expected == len(body) - len(body) // 2
    assert _leftovers(tmp_path) == []
    with pytest.raises(http.client.IncompleteRead):
        hub.load_state_dict_from_url(server.url + "/drop/blob.bin", model_dir=str(tmp_path),
                                     progress=False)
    assert _leftovers(tmp_path) == []


def test_missing_url_raises_http_error(server, tmp_path):
    for lib in (torch.hub, hub):
        with pytest.raises(urllib.error.HTTPError) as info:
            lib.download_url_to_file(server.url + "/nothing.pth", str(tmp_path / "x"),
                                     progress=False)
        assert info.value.code == 404
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("progress", [True, False])
def test_progress_bar_on_and_off(server, tmp_path, capfd, progress):
    server.files["/blob.bin"] = _payload()
    torch.hub.download_url_to_file(server.url + "/blob.bin", str(tmp_path / "t"), progress=progress)
    torch_err = capfd.readouterr().err
    hub.download_url_to_file(server.url + "/blob.bin", str(tmp_path / "e"), progress=progress)
    ember_err = capfd.readouterr().err
    # Both draw tqdm's bar (installed with the test extra) when asked, and nothing otherwise.
    assert ("100%" in ember_err) == ("100%" in torch_err) == progress
    assert (ember_err == "") == (torch_err == "") == (not progress)


def test_progress_without_tqdm_falls_back_to_plain_text(server, tmp_path, capfd, monkeypatch):
    server.files["/blob.bin"] = body = _payload()
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    hub.download_url_to_file(server.url + "/blob.bin", str(tmp_path / "e"), progress=True)
    err = capfd.readouterr().err
    assert err.endswith("100.0%\n")
    assert (tmp_path / "e").read_bytes() == body
    hub.download_url_to_file(server.url + "/blob.bin", str(tmp_path / "f"), progress=False)
    assert capfd.readouterr().err == ""


# ---- load_state_dict_from_url --------------------------------------------------------------

def _torch_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))


def _ember_net():
    return ember.nn.Sequential(ember.nn.Linear(5, 7), ember.nn.Tanh(), ember.nn.Linear(7, 3))


def _checkpoint_bytes(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_torch_checkpoint_loads_into_ember_module(server, torch_home, capsys):
    net = _torch_net()
    server.files["/weights/net.pth"] = _checkpoint_bytes(net.state_dict())
    state = hub.load_state_dict_from_url(server.url + "/weights/net.pth", progress=False)
    cached = torch_home / "hub" / "checkpoints" / "net.pth"
    assert capsys.readouterr().out == f'Downloading: "{server.url}/weights/net.pth" to {cached}\n'
    assert cached.exists()
    model = _ember_net()
    model.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    expected = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(model(ember.tensor(x)).detach().numpy(), expected,
                               rtol=1e-6, atol=1e-6)


def test_second_call_is_served_from_the_cache(server, torch_home, capsys):
    server.files["/net.pth"] = _checkpoint_bytes({"w": torch.arange(6.0)})
    first = hub.load_state_dict_from_url(server.url + "/net.pth", progress=False)
    second = hub.load_state_dict_from_url(server.url + "/net.pth", progress=False)
    assert server.count("/net.pth") == 1
    assert first["w"].tolist() == second["w"].tolist() == list(range(6))
    # torch finds the file Ember downloaded: the cache is shared on purpose.
    again = torch.hub.load_state_dict_from_url(server.url + "/net.pth", progress=False)
    assert server.count("/net.pth") == 1 and again["w"].tolist() == list(range(6))


def test_check_hash_from_file_name(server, torch_home):
    body = _checkpoint_bytes({"w": torch.ones(3)})
    prefix = hashlib.sha256(body).hexdigest()[:8]
    server.files[f"/net-{prefix}.pth"] = body
    server.files["/bad-deadbeef.pth"] = body
    state = hub.load_state_dict_from_url(f"{server.url}/net-{prefix}.pth", check_hash=True,
                                         progress=False)
    assert state["w"].tolist() == [1.0, 1.0, 1.0]
    messages = []
    for lib in (torch.hub, hub):
        with pytest.raises(RuntimeError) as info:
            lib.load_state_dict_from_url(f"{server.url}/bad-deadbeef.pth", check_hash=True,
                                         progress=False)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and messages[1].startswith("invalid hash value")
    assert _leftovers(torch_home / "hub" / "checkpoints") == [f"net-{prefix}.pth"]
    # Without check_hash, the name's hash is not checked.
    state = hub.load_state_dict_from_url(f"{server.url}/bad-deadbeef.pth", progress=False)
    assert state["w"].tolist() == [1.0, 1.0, 1.0]


def test_model_dir_file_name_and_map_location(server, tmp_path):
    server.files["/x.pth"] = _checkpoint_bytes({"w": torch.arange(3)})
    state = hub.load_state_dict_from_url(server.url + "/x.pth", model_dir=str(tmp_path / "m"),
                                         file_name="renamed.pth", map_location="cpu",
                                         weights_only=True, progress=False)
    assert _leftovers(tmp_path / "m") == ["renamed.pth"]
    assert state["w"].dtype is ember.int64 and state["w"].tolist() == [0, 1, 2]


def test_404_raises_http_error_and_caches_nothing(server, torch_home):
    for lib in (torch.hub, hub):
        with pytest.raises(urllib.error.HTTPError):
            lib.load_state_dict_from_url(server.url + "/missing.pth", progress=False)
    assert _leftovers(torch_home / "hub" / "checkpoints") == []


def test_legacy_single_file_zip_is_unpacked(server, torch_home):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("inner.pth", _checkpoint_bytes({"w": torch.arange(4.0)}))
    server.files["/old.zip"] = buf.getvalue()
    results = []
    for lib in (torch.hub, hub):
        with pytest.warns(FutureWarning, match="Falling back to the old format < 1.6"):
            results.append(lib.load_state_dict_from_url(server.url + "/old.zip", progress=False,
                                                        file_name=f"{lib.__name__}.zip"))
    assert results[1]["w"].tolist() == results[0]["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "inner.pth" in _leftovers(torch_home / "hub" / "checkpoints")


# ---- hubconf.py ----------------------------------------------------------------------------

_HUBCONF = '''
dependencies = ["json"]


def scaled(values, factor=2):
    """Multiply every value by factor."""
    return [v * factor for v in values]


def needs_missing():
    return 1


def _private():
    return 0


not_callable = 3
'''


@pytest.fixture
def repo(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "hubconf.py").write_text(_HUBCONF)
    return folder


def test_local_load_list_help_match_torch(repo):
    for lib in (torch.hub, hub):
        assert lib.load(str(repo), "scaled", [1, 2], source="local", factor=3) == [3, 6]
    assert hub.load(str(repo), "scaled", [1], source="LOCAL") == [2]


def test_local_errors_match_torch(repo, tmp_path):
    for model, kind in (("not_callable", RuntimeError), ("absent", RuntimeError),
                        ("_missing_", RuntimeError), (3, ValueError)):
        messages = []
        for lib in (torch.hub, hub):
            with pytest.raises(kind) as info:
                lib.load(str(repo), model, source="local")
            messages.append(str(info.value))
        assert messages[0] == messages[1]
    for lib in (torch.hub, hub):
        with pytest.raises(ValueError, match='Unknown source: "ftp"'):
            lib.load(str(repo), "scaled", source="ftp")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "hubconf.py").write_text('dependencies = ["json", "no_such_pkg_x1", "no_such_y2"]\n'
                                       "def f():\n    return 1\n")
    messages = []
    for lib in (torch.hub, hub):
        with pytest.raises(RuntimeError) as info:
            lib.load(str(broken), "f", source="local")
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Missing dependencies: no_such_pkg_x1, no_such_y2"


def test_local_hubconf_builds_an_ember_model(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "helpers.py").write_text("WIDTH = 4\n")
    (folder / "hubconf.py").write_text(
        "import ember as torch\nfrom helpers import WIDTH\ndependencies = ['ember', 'numpy']\n\n"
        "def tiny(out=2):\n    return torch.nn.Linear(WIDTH, out)\n")
    model = hub.load(str(folder), "tiny", out=3, source="local")
    assert isinstance(model, ember.nn.Linear) and tuple(model.weight.shape) == (3, 4)
    assert str(folder) not in sys.path  # the folder is on sys.path only while hubconf runs


def _archive(top, files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{top}/", "")  # GitHub's archives list their top folder first
        for name, text in files.items():
            zf.writestr(f"{top}/{name}", text)
    return buf.getvalue()


@pytest.fixture
def github(server, monkeypatch):
    """GitHub as the local server: /owner/repo/tree/main/ exists, the archive of main is
    served, and the branch listing of the API names main."""
    monkeypatch.setattr(hub, "_GITHUB_BASE", server.url)
    monkeypatch.setattr(hub, "_GITHUB_API_BASE", server.url)
    server.files["/alice/models/tree/main/"] = b"<html></html>"
    server.files["/alice/models/zipball/main"] = _archive("alice-models-1a2b3c",
                                                          {"hubconf.py": _HUBCONF})
    server.files["/repos/alice/models/branches"] = json.dumps(
        [{"name": "main", "commit": {"sha": "1a2b3c4d"}}]).encode()
    server.files["/repos/alice/models/tags"] = b"[]"
    return server


def test_github_source_downloads_and_caches(github, torch_home, capsys):
    result = hub.load("alice/models", "scaled", [1, 2], trust_repo=True)
    assert result == [2, 4]
    repo_dir = torch_home / "hub" / "alice_models_main"
    assert (repo_dir / "hubconf.py").read_text() == _HUBCONF
    assert (torch_home / "hub" / "trusted_list").read_text() == "alice_models\n"
    assert github.count("/alice/models/zipball/main") == 1
    assert github.count("/repos/alice/models/branches") == 1
    # No zip or extracted folder is left next to the cached repository.
    assert _leftovers(torch_home / "hub") == ["alice_models_main", "trusted_list"]
    capsys.readouterr()

    assert hub.list("alice/models:main", trust_repo="check") == ["needs_missing", "scaled"]
    assert hub.help("alice/models:main", "scaled") == "Multiply every value by factor."
    assert github.count("/alice/models/zipball/main") == 1
    assert f"Using cache found in {repo_dir}" in capsys.readouterr().err

    hub.load("alice/models:main", "scaled", [1], force_reload=True, skip_validation=True)
    assert github.count("/alice/models/zipball/main") == 2
    assert github.count("/repos/alice/models/branches") == 1


def test_github_untrusted_repo_asks(github, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(Exception, match="Untrusted repository."):
        hub.load("alice/models", "scaled", [1])
    assert github.count("/alice/models/zipball/main") == 0
    monkeypatch.setattr("builtins.input", lambda prompt: "maybe")
    with pytest.raises(ValueError, match="Unrecognized response maybe."):
        hub.load("alice/models", "scaled", [1])
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert hub.load("alice/models", "scaled", [1]) == [2]


def test_github_ref_of_a_fork_is_refused(github):
    with pytest.raises(ValueError, match="Cannot find feature in https://github.com/alice/models"):
        hub.load("alice/models:feature", "scaled", [1], trust_repo=True)
    with pytest.raises(urllib.error.HTTPError):
        hub.load("alice/models:feature", "scaled", [1], trust_repo=True, skip_validation=True)
