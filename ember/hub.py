"""``ember.hub``, as ``torch.hub``: download checkpoints and load models from ``hubconf.py``.

The cache is PyTorch's own: ``$TORCH_HOME/hub`` (``TORCH_HOME`` defaults to
``$XDG_CACHE_HOME/torch``, ``XDG_CACHE_HOME`` to ``~/.cache``), with downloaded weights in
``hub/checkpoints``. Sharing it is deliberate: Ember loads PyTorch's checkpoint files as they
are, so a file that either library downloaded once serves both, and a script ported to
``import ember as torch`` finds the weights it already has.

A download streams into a uniquely named ``<dst>.<hex>.partial`` file beside its destination,
is checked against the SHA-256 prefix when one is given, and only then is renamed into place:
an interrupted or mismatching download never leaves a file at ``dst``.

``load``/``list``/``help`` run the ``hubconf.py`` of a local directory (``source='local'``) or
of a GitHub repository, downloaded as a zip archive over HTTPS through the same downloader and
unpacked into ``hub/<owner>_<repo>_<ref>``. Running a repository's ``hubconf.py`` runs its
code: ``trust_repo`` works as in PyTorch (``"check"`` asks about repositories not yet trusted).
"""
import contextlib
import errno
import hashlib
import http.client
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url",
           "set_dir"]

# The hash torch's naming convention puts in a file name: bfd8deac in resnet18-bfd8deac.pth.
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024

# Where repository archives and the branch/tag listing come from; the tests point these at a
# server on 127.0.0.1, since GitHub cannot be reached from them.
_GITHUB_BASE = "https://github.com"
_GITHUB_API_BASE = "https://api.github.com"
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
_PATH_SEP_PATTERN = re.compile(r"[/\\]")

_hub_dir = None


# ---- cache directory -----------------------------------------------------------------------

def _get_torch_home():
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, default))


def get_dir():
    """The hub cache directory: the one ``set_dir`` chose, else ``$TORCH_HOME/hub``."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Use ``d`` as the hub cache directory from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# ---- downloading ---------------------------------------------------------------------------

class _PlainProgress:
    """What ``download_url_to_file`` reports progress with when tqdm is not installed (it
    comes with the ``demo`` extra): a percentage, or a byte count when the size is unknown."""

    def __init__(self, total=None, disable=False, **kwargs):
        self.total = total
        self.disable = disable
        self.n = 0

    def update(self, n):
        if self.disable:
            return
        self.n += n
        if self.total is None:
            sys.stderr.write(f"\r{self.n:.1f} bytes")
        else:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        sys.stderr.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.disable:
            sys.stderr.write("\n")


def _progress_bar(total, progress):
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = _PlainProgress
    return tqdm(total=total, disable=not progress, unit="B", unit_scale=True, unit_divisor=1024)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download ``url`` to the path ``dst``.

    ``hash_prefix``: the downloaded bytes' SHA-256 hex digest must start with it, else
    ``RuntimeError("invalid hash value ...")``. ``progress`` shows a bar on stderr.
    """
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp_dst = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            f = open(tmp_dst, "x+b")
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    request = Request(url, headers={"User-Agent": "torch.hub"})
    try:
        with urlopen(request) as response:
            lengths = response.info().get_all("Content-Length")
            file_size = int(lengths[0]) if lengths else None
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            received = 0
            with _progress_bar(file_size, progress) as bar:
                while True:
                    chunk = response.read(READ_DATA_CHUNK)
                    if not chunk:
                        break
                    f.write(chunk)
                    received += len(chunk)
                    if sha256 is not None:
                        sha256.update(chunk)
                    bar.update(len(chunk))
            f.close()
            # http.client's read(n) returns b"" when the server drops the connection, exactly
            # as at the end of the body; only the announced length tells them apart (torch.hub
            # does not check, and keeps the truncated file).
            if file_size is not None and received != file_size:
                raise http.client.IncompleteRead(b"", file_size - received)
            if sha256 is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                       f'"{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _is_legacy_zip_format(filename):
    """A zip archive holding a single file: how checkpoints were shipped before PyTorch 1.6."""
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir()
    return False


def _legacy_zip_load(filename, model_dir, map_location, weights_only):
    from .serialization import load as ember_load
    warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in "
                  "favor of default zipfile format introduced in 1.6. Please redo torch.save() "
                  "to save it in the new zipfile format.", FutureWarning, stacklevel=3)
    with zipfile.ZipFile(filename) as f:
        members = f.infolist()
        if len(members) != 1:
            raise RuntimeError("Only one file(not dir) is allowed in the zipfile")
        _safe_extract_zip(f, model_dir)
        extracted_file = os.path.join(model_dir, members[0].filename)
    return ember_load(extracted_file, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Download the checkpoint at ``url`` into ``model_dir`` (``<hub_dir>/checkpoints``) unless
    it is already there, and ``ember.load`` it.

    ``check_hash=True`` checks the SHA-256 prefix that torch's naming convention puts in the
    file name (``name-<prefix>.ext``). ``file_name`` replaces the name taken from the URL. A
    zip archive holding one file (the pre-1.6 way of shipping checkpoints) is unpacked first.
    """
    from .serialization import load as ember_load
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)

    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)

    if _is_legacy_zip_format(cached_file):
        return _legacy_zip_load(cached_file, model_dir, map_location, weights_only)
    return ember_load(cached_file, map_location=map_location, weights_only=weights_only)


# ---- repositories with a hubconf.py ------------------------------------------------------

def _safe_extract_zip(zip_file, extract_to):
    """Extract every member, refusing absolute paths and ``..`` that would escape the folder."""
    extract_to = Path(extract_to).resolve(strict=False)
    for member in zip_file.infolist():
        filename = os.path.normpath(member.filename)
        if filename.startswith(("/", "\\")) or (len(filename) >= 2 and filename[1] == ":"
                                               and filename[0].isalpha()):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(_PATH_SEP_PATTERN, filename):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (extract_to / filename).resolve(strict=False).is_relative_to(extract_to):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        zip_file.extract(member, extract_to)


def _remove_if_exists(path):
    if os.path.isfile(path):
        os.remove(path)
    elif os.path.exists(path):
        shutil.rmtree(path)


def _git_archive_link(repo_owner, repo_name, ref):
    return f"{_GITHUB_BASE}/{repo_owner}/{repo_name}/zipball/{ref}"


def _parse_repo_info(github):
    """``owner/name[:ref]`` -> (owner, name, ref); without a ref, ``main`` if the repository
    has it, else ``master`` (offline: whichever of the two is cached)."""
    if ":" in github:
        repo_info, ref = github.split(":")
    else:
        repo_info, ref = github, None
    repo_owner, repo_name = repo_info.split("/")
    if ref is None:
        try:
            with urlopen(f"{_GITHUB_BASE}/{repo_owner}/{repo_name}/tree/main/"):
                ref = "main"
        except HTTPError as e:
            if e.code != 404:
                raise
            ref = "master"
        except URLError as e:
            for possible_ref in ("main", "master"):
                if os.path.exists(f"{get_dir()}/{repo_owner}_{repo_name}_{possible_ref}"):
                    ref = possible_ref
                    break
            if ref is None:
                raise RuntimeError("It looks like there is no internet connection and the repo "
                                   f"could not be found in the cache ({get_dir()})") from e
    return repo_owner, repo_name, ref


def _read_json(url, headers):
    with urlopen(Request(url, headers=headers)) as r:
        return json.loads(r.read().decode(r.headers.get_content_charset("utf-8")))


def _validate_not_a_forked_repo(repo_owner, repo_name, ref):
    """The ref must be a branch or tag name (or a commit prefix of one) of the repository
    itself: GitHub also serves commits of forks under the original's name."""
    headers = {"Accept": "application/vnd.github.v3+json"}
    token = os.environ.get(ENV_GITHUB_TOKEN)
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for kind in ("branches", "tags"):
        page = 0
        while True:
            page += 1
            url = (f"{_GITHUB_API_BASE}/repos/{repo_owner}/{repo_name}/{kind}"
                   f"?per_page=100&page={page}")
            try:
                response = _read_json(url, headers)
            except HTTPError:
                if "Authorization" not in headers:
                    raise
                # Retry without the token, in case it lacks the permission.
                del headers["Authorization"]
                response = _read_json(url, headers)
            if not response:
                break
            for entry in response:
                if entry["name"] == ref or entry["commit"]["sha"].startswith(ref):
                    return
    raise ValueError(f"Cannot find {ref} in https://github.com/{repo_owner}/{repo_name}. If it's a "
                     "commit from a forked repo, please call hub.load() with forked repo directly.")


def _check_repo_is_trusted(repo_owner, repo_name, owner_name_branch, trust_repo):
    hub_dir = get_dir()
    filepath = os.path.join(hub_dir, "trusted_list")
    if not os.path.exists(filepath):
        Path(filepath).touch()
    with open(filepath) as file:
        trusted_repos = tuple(line.strip() for line in file)
    # A repository downloaded before trust_repo existed counts as trusted, as in torch.hub.
    trusted_repos_legacy = next(os.walk(hub_dir))[1]
    owner_name = "_".join([repo_owner, repo_name])
    is_trusted = (owner_name in trusted_repos or owner_name_branch in trusted_repos_legacy
                  or repo_owner in _TRUSTED_REPO_OWNERS)
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted "
                         "repositories and as such cannot be downloaded. Do you trust this "
                         "repository and wish to add it to the trusted list of repositories "
                         "(y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(filepath, "a") as file:
            file.write(owner_name + "\n")


def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=False):
    """The local folder holding repository ``github``, downloading and unpacking it if needed."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    repo_owner, repo_name, ref = _parse_repo_info(github)
    # Branch names may contain "/", which cannot be part of a folder name.
    normalized_br = ref.replace("/", "_")
    owner_name_branch = "_".join([repo_owner, repo_name, normalized_br])
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(repo_owner, repo_name, owner_name_branch, trust_repo=trust_repo)

    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(repo_owner, repo_name, ref)
    cached_file = os.path.join(hub_dir, normalized_br + ".zip")
    _remove_if_exists(cached_file)
    try:
        url = _git_archive_link(repo_owner, repo_name, ref)
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        download_url_to_file(url, cached_file, progress=False)
    except HTTPError as err:
        if err.code != 300:
            raise
        # 300 Multiple Choices: the ref is both a tag and a branch; take the branch, as git does.
        warnings.warn(f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the "
                      "repo? Torchhub will now assume that it's a branch. You can disambiguate "
                      "tags and branches by explicitly passing refs/heads/branch_name or "
                      "refs/tags/tag_name as the ref. That might require using "
                      "skip_validation=True.", stacklevel=3)
        url = _git_archive_link(repo_owner, repo_name, ref=f"refs/heads/{ref}")
        download_url_to_file(url, cached_file, progress=False)

    with zipfile.ZipFile(cached_file) as cached_zipfile:
        # GitHub names the archive's top folder itself (owner-repo-sha).
        extracted_repo = os.path.join(hub_dir, cached_zipfile.infolist()[0].filename)
        _remove_if_exists(extracted_repo)
        _safe_extract_zip(cached_zipfile, hub_dir)
    _remove_if_exists(cached_file)
    _remove_if_exists(repo_dir)
    shutil.move(extracted_repo, repo_dir)
    return repo_dir


@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_attr_from_module(module, func_name):
    if func_name not in dir(module):
        return None
    return getattr(module, func_name)


def _check_dependencies(module):
    dependencies = _load_attr_from_module(module, VAR_DEPENDENCY)
    if dependencies is not None:
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _load_entry_from_hubconf(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    # A dependency that hubconf.py imports at its top has already failed with Python's own
    # ImportError; `dependencies` covers the ones it imports inside entrypoints.
    _check_dependencies(module)
    func = _load_attr_from_module(module, model)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _load_local(hubconf_dir, model, *args, **kwargs):
    with _add_to_sys_path(hubconf_dir):
        entry = _load_entry_from_hubconf(_import_hubconf(hubconf_dir), model)
        return entry(*args, **kwargs)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """The callable entrypoints (public names) of ``github``'s ``hubconf.py``;
    ``github`` is ``"owner/repo[:ref]"``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=verbose,
                                    skip_validation=skip_validation)
    with _add_to_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
    return [name for name in dir(module)
            if callable(getattr(module, name)) and not name.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """The docstring of entrypoint ``model`` in ``github``'s ``hubconf.py``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=True,
                                    skip_validation=skip_validation)
    with _add_to_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
    return _load_entry_from_hubconf(module, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call entrypoint ``model`` of a ``hubconf.py`` with ``*args, **kwargs`` and return what it
    returns. ``source='github'``: ``repo_or_dir`` is ``"owner/repo[:ref]"``, downloaded into
    the hub cache unless cached (``force_reload`` downloads again); ``source='local'``: it is
    a folder holding ``hubconf.py``."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo,
                                           verbose=verbose, skip_validation=skip_validation)
    return _load_local(repo_or_dir, model, *args, **kwargs)

