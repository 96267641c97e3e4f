"""Kernels kept on disk (integrators._disk_cache): keyed on the code, loaded by a second process, rebuilt
when edited or corrupt, safe when two processes compile at once, following NUMBA_CACHE_DIR."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba as nb
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrators import _disk_cache as dc

ROOT = Path(__file__).resolve().parents[1]

# a user module with a kernel built by a factory (a closure calling a helper that reads a global), as the
# toolkit builds its kernels; {op} and {scale} vary between the tests' versions of it
USER_MODULE = """
import numba as nb
import numpy as np
from integrators._disk_cache import disk_cached

SCALE = {scale}


@nb.njit
def helper(x):
    return x {op} SCALE


def make():
    @nb.njit
    def kern(a):
        s = 0.0
        for i in range(a.shape[0]):
            s += helper(a[i])
        return s

    return disk_cached(kern, "kern")
"""

RUN_USER_KERNEL = """
import json, sys
sys.path.insert(0, sys.argv[1])
from integrators._disk_cache import on_compile
import numpy as np
import userkern
compiled = []
with on_compile(compiled.append):
    kern = userkern.make()
    value = kern(np.arange(5.0))
print(json.dumps({"value": value, "compiled": compiled, "hits": sum(kern.stats.cache_hits.values())}))
"""


def _env(cache: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("SMS_LANGEVIN_CACHE_DIR", None)
    env.pop("SMS_LANGEVIN_DISK_CACHE", None)
    return env


def _run(code: str, cache: Path, *args) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=_env(cache), cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _user_module(folder: Path, op="*", scale=2.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "userkern.py").write_text(USER_MODULE.format(op=op, scale=scale))
    return folder


# ------------------------------------------------------------------------------ the fingerprint
def _function(source: str, name: str, namespace: dict | None = None):
    namespace = {"nb": nb, "np": np, **(namespace or {})}
    exec(textwrap.dedent(source), namespace)  # noqa: S102 (the tests' own text)
    return namespace[name]


@given(st.sampled_from(["+", "-", "*"]), st.sampled_from(["+", "-", "*"]),
       st.floats(-4, 4, allow_nan=False), st.floats(-4, 4, allow_nan=False))
def test_the_fingerprint_changes_with_the_code_and_only_with_it(op1, op2, c1, c2):
    def make(op, c):
        return _function(f"def f(x):\n    return x {op} {c!r}\n", "f")

    same_code = dc.fingerprint(make(op1, c1)) == dc.fingerprint(make(op2, c2))
    assert same_code == (op1 == op2 and repr(c1) == repr(c2))


def test_the_fingerprint_follows_called_helpers_closures_and_global_arrays():
    def build(helper_body, table):
        helper = nb.njit(_function(f"def helper(x):\n    return {helper_body}\n", "helper"))
        outer = _function("def outer(x):\n    return helper(x) + TABLE[0]\n", "outer",
                          {"helper": helper, "TABLE": table})

        def factory(fn):
            def closure(x):
                return fn(x)
            return closure

        return dc.fingerprint(factory(nb.njit(outer)))

    base = build("x * 2.0", np.array([1.0, 2.0]))
    assert base == build("x * 2.0", np.array([1.0, 2.0]))
    assert base != build("x * 3.0", np.array([1.0, 2.0]))   # a helper two calls down
    assert base != build("x * 2.0", np.array([1.0, 2.5]))   # a global array's values


def test_an_object_the_walk_does_not_know_is_refused_by_name():
    class Settings:
        pass

    fn = _function("def f(x):\n    return SETTINGS\n", "f", {"SETTINGS": Settings()})
    with pytest.raises(dc.Uncacheable, match="Settings"):
        dc.fingerprint(fn)
    dispatcher = nb.njit(fn)
    assert dc.disk_cached(dispatcher) is dispatcher and not isinstance(dispatcher._cache, dc.KeyedCache)


@pytest.mark.slow  # fresh processes, each compiling
def test_the_fingerprint_is_the_same_in_another_process(tmp_path):
    code = """
import json, sys
sys.path.insert(0, sys.argv[1])
from integrators import GaussianTarget
from integrators._disk_cache import fingerprint
from integrators._kernel import sampler_kind
from integrators.plans import resolve_plan
from integrators.schemes import resolve_scheme
from integrators.targets._force import lane_force_for
import userkern
kind = sampler_kind(resolve_scheme("ubu"), lane_force_for(GaussianTarget.one_d_example()), resolve_plan("sms"))
print(json.dumps([fingerprint(kind), fingerprint(userkern.make().py_func)]))
"""
    folder = _user_module(tmp_path / "src")
    first = _run(code, tmp_path / "cache", folder)
    assert first == _run(code, tmp_path / "cache", folder)


def test_the_toolkit_source_hash_changes_with_any_toolkit_file(tmp_path, monkeypatch):
    for package in ("integrators", "bias"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(dc, "_ROOT", tmp_path)
    monkeypatch.setattr(dc, "_TOOLKIT_HASH", [])
    before = dc.toolkit_hash()
    (tmp_path / "bias" / "a.py").write_text("x = 2\n")
    monkeypatch.setattr(dc, "_TOOLKIT_HASH", [])
    assert dc.toolkit_hash() != before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_named_like_a_source_file_is_skipped_by_the_source_hashes_without_blocking(tmp_path, monkeypatch):
    """Python's import skips a fifo named ``zz.py`` (it is no module); a hash that opened it would block
    every command, since the toolkit hash is taken when ``integrators`` is imported."""
    import signal

    from reports import _runmeta as runmeta
    for package in ("integrators", "experiments"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(dc, "_ROOT", tmp_path)
    monkeypatch.setattr(runmeta, "ROOT", tmp_path)
    monkeypatch.setattr(dc, "_TOOLKIT_HASH", [])
    before = dc.toolkit_hash(), runmeta.code_version.__wrapped__("json")  # unwrapped: not the process's cache
    for package in ("integrators", "experiments"):
        os.mkfifo(tmp_path / package / "zz.py")
    monkeypatch.setattr(dc, "_TOOLKIT_HASH", [])
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("a source hash blocked on the fifo"))
    signal.alarm(10)
    try:
        assert (dc.toolkit_hash(), runmeta.code_version.__wrapped__("json")) == before
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------------------ the cache on disk
@pytest.mark.slow  # fresh processes, each compiling
def test_a_second_process_loads_what_the_first_compiled_and_an_edit_recompiles(tmp_path):
    cache = tmp_path / "cache"
    source = _user_module(tmp_path / "v1")
    first = _run(RUN_USER_KERNEL, cache, source)
    assert first["value"] == 20.0 and first["compiled"] == ["kern"]
    second = _run(RUN_USER_KERNEL, cache, source)
    assert second == {"value": 20.0, "compiled": [], "hits": 1}
    edited = _run(RUN_USER_KERNEL, cache, _user_module(tmp_path / "v2", op="-"))  # the helper, not the kernel
    assert edited["value"] == 0.0 and edited["compiled"] == ["kern"]
    assert _run(RUN_USER_KERNEL, cache, _user_module(tmp_path / "v3", scale=3.0))["value"] == 30.0
    assert _run(RUN_USER_KERNEL, cache, source)["compiled"] == []  # the first version's entry is still there


@pytest.mark.slow  # fresh processes, each compiling
def test_a_corrupt_entry_is_rebuilt_never_used(tmp_path):
    cache, source = tmp_path / "cache", _user_module(tmp_path / "src")
    _run(RUN_USER_KERNEL, cache, source)
    (data,) = cache.rglob("kern-*.nbc")
    (index,) = cache.rglob("kern-*.nbi")

    def flip(raw):
        raw = bytearray(raw)
        raw[len(raw) // 2] ^= 0x40
        return bytes(raw)

    for damaged, damage in [(data, flip), (data, lambda raw: raw[: len(raw) // 3]), (data, lambda raw: b""),
                            (index, lambda raw: b"\x00" * 40)]:
        damaged.write_bytes(damage(damaged.read_bytes()))
        rebuilt = _run(RUN_USER_KERNEL, cache, source)
        assert rebuilt == {"value": 20.0, "compiled": ["kern"], "hits": 0}, damaged.name
    assert _run(RUN_USER_KERNEL, cache, source)["compiled"] == []  # written again, whole


@pytest.mark.slow  # fresh processes, each compiling
def test_two_processes_compiling_the_same_kernel_at_once(tmp_path):
    cache, source = tmp_path / "cache", _user_module(tmp_path / "src")
    procs = [subprocess.Popen([sys.executable, "-c", RUN_USER_KERNEL, str(source)], env=_env(cache), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])["value"] == 20.0
    assert _run(RUN_USER_KERNEL, cache, source) == {"value": 20.0, "compiled": [], "hits": 1}


def test_the_folder_follows_numba_cache_dir_and_the_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    folder = dc.cache_folder()
    assert folder.parent == tmp_path / "sms-langevin"
    assert f"numba{nb.__version__}" in folder.name and dc.toolkit_hash()[:16] in folder.name
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("SMS_LANGEVIN_CACHE_DIR", str(tmp_path / "own"))
    assert dc.cache_folder().parent == tmp_path / "own"
    monkeypatch.delenv("SMS_LANGEVIN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dc.cache_folder().parent == tmp_path / "xdg" / "sms-langevin" / "kernels"


@pytest.mark.slow  # fresh processes, each compiling
def test_a_folder_that_cannot_be_written_warns_once_and_the_kernel_runs(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code = RUN_USER_KERNEL.replace("print(json.dumps(", "import warnings\nprint(json.dumps(")
    done = subprocess.run([sys.executable, "-W", "always", "-c", code, str(_user_module(tmp_path / "src"))],
                          env=_env(blocker / "below"), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["value"] == 20.0
    assert done.stderr.count("cannot be kept in") == 1


def test_argument_types_naming_a_numba_function_keep_the_kernel_in_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    inner = nb.njit(lambda x: x + 1.0)
    outer = dc.disk_cached(nb.njit(_function("def call(f, x):\n    return f(x)\n", "call")), "call")
    assert outer(inner, 1.0) == 2.0
    assert not list(tmp_path.rglob("*.nbc"))


def test_the_disk_cache_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("SMS_LANGEVIN_DISK_CACHE", "0")
    dispatcher = nb.njit(lambda x: x)
    assert not isinstance(dc.disk_cached(dispatcher)._cache, dc.KeyedCache)


@pytest.mark.slow
def test_a_second_process_runs_sample_without_compiling():
    """The toolkit's own kernel (run_chains with its callees), in the user's cache folder: the first process
    compiles what is missing, the second compiles nothing."""
    code = """
import json
from integrators import GaussianTarget, sample
from integrators._disk_cache import on_compile
compiled = []
with on_compile(compiled.append):
    res = sample(GaussianTarget.one_d_example(), scheme="ubu", plan="sms", h=0.125, batch_size=1, n_chains=16,
                 n_steps=50, seed=3)
print(json.dumps({"compiled": compiled, "mean": res.chain_mean.tolist()}))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        outs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outs[1]["compiled"] == [] and outs[1]["mean"] == outs[0]["mean"]


def test_old_code_versions_are_pruned_as_a_new_one_starts(tmp_path):
    for i in range(dc.KEEP_FOLDERS + 3):
        old = tmp_path / f"py311-numba0-old{i}"
        old.mkdir()
        os.utime(old, (1000 + i, 1000 + i))
    (tmp_path / "not-a-version").mkdir()
    (tmp_path / "py311-numba0-new").mkdir()
    dc.prune_old_versions(tmp_path)
    kept = {p.name for p in tmp_path.iterdir()}
    assert "py311-numba0-new" in kept and "not-a-version" in kept
    assert kept >= {f"py311-numba0-old{i}" for i in range(4, dc.KEEP_FOLDERS + 3)} and "py311-numba0-old2" not in kept
    assert len(kept) == dc.KEEP_FOLDERS + 1


SCHEME_MODULE = """
import numba as nb
import numpy as np
from integrators import Scheme


@nb.njit(nogil=True)
def drift_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += {shift} * coef[0]


def coefficients(h, gamma):
    return np.array([h])


DRIFT = Scheme("drift", drift_step, coefficients, WEAK_ORDER=1.0, STRONG_ORDER=1.0)
"""

RUN_SCHEME = """
import json, sys
sys.path.insert(0, sys.argv[1])
from integrators import GaussianTarget, sample
from integrators._disk_cache import on_compile
import myscheme
compiled = []
with on_compile(compiled.append):
    res = sample(GaussianTarget.one_d_example(), scheme=myscheme.DRIFT, plan="full", h=0.5, n_chains=8, n_steps=2,
                 x0=0.0)
print(json.dumps({"mean": float(res.chain_mean.mean()), "compiled": compiled}))
"""


@pytest.mark.slow  # fresh processes, each compiling a kernel for the scheme
def test_an_edited_scheme_step_is_recompiled_in_a_new_process(tmp_path):
    """sample() with a user scheme, then the same scheme with its step edited: the new process compiles the new
    step and runs it (the chain moves twice as far), and the first version's kernel is still loaded unchanged."""
    def version(name, shift):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "myscheme.py").write_text(SCHEME_MODULE.format(shift=shift))
        return folder

    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the user's cache folder: the toolkit's kernels are likely there

    def run(folder):
        done = subprocess.run([sys.executable, "-c", RUN_SCHEME, str(folder)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run(version("v1", "1.0"))
    assert first["mean"] == pytest.approx(0.75)  # x after steps 1, 2: 0.5, 1.0
    edited = run(version("v2", "2.0"))
    assert edited["mean"] == pytest.approx(1.5) and "run_chains" in edited["compiled"]
    again = run(version("v3", "1.0"))  # the first version's code, from another file: loaded, not compiled
    assert again == {"mean": pytest.approx(0.75), "compiled": []}


def test_numbas_code_settings_are_part_of_the_key(monkeypatch, tmp_path):
    from numba.core import config

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    fn = _function("def f(x):\n    return x + 1.0\n", "f")
    plain = dc.disk_cached(nb.njit(fn))._cache._key
    monkeypatch.setattr(config, "BOUNDSCHECK", 1)
    assert dc.disk_cached(nb.njit(fn))._cache._key != plain


def _module(name: str, source: str):
    import types

    module = types.ModuleType(name)
    exec(textwrap.dedent(source), module.__dict__)  # noqa: S102 (the tests' own text)
    return module


def test_the_fingerprint_follows_a_user_module_through_the_attributes_read(monkeypatch):
    """``mod.f`` reached by attribute: the function it calls in turn, and values set on the module at run time."""
    def user(factor, scale):
        helper = _module("helpermod", f"import numba as nb\n@nb.njit\ndef g(x):\n    return x * {factor}\n")
        mod = _module("usermod", "import numba as nb\n@nb.njit\ndef f(x):\n    return g(x)\n")
        mod.g, mod.SCALE = helper.g, scale
        monkeypatch.setitem(sys.modules, "usermod", mod)
        return dc.fingerprint(nb.njit(_function("def k(x):\n    return usermod.f(x) * usermod.SCALE\n", "k",
                                                {"usermod": mod})))

    base = user(2, 1.0)
    assert base == user(2, 1.0) and base != user(3, 1.0) and base != user(2, 5.0)


def test_numba_options_and_record_dtypes_are_keyed():
    def key(decorator, body="    y = x\n    return y\n"):
        return dc.fingerprint(eval(decorator, {"nb": nb})(_function(f"def f(x):\n{body}", "f")))

    assert key("nb.njit(locals={'y': nb.float32})") != key("nb.njit")
    assert key("nb.njit('float32(float32)')") != key("nb.njit('float64(float64)')")
    a = np.zeros(1, dtype=[("a", "f8"), ("b", "f8")])
    b = np.zeros(1, dtype=[("b", "f8"), ("a", "f8")])
    assert dc.fingerprint((a,)) != dc.fingerprint((b,))


def test_what_the_walk_cannot_describe_keeps_the_kernel_in_memory():
    """Fail closed: an @overload stub (its body is not what compiles), a class of a module Python does not
    know, an intrinsic."""
    from numba.extending import intrinsic, overload

    def stub(x):
        return x

    @overload(stub)
    def _stub_impl(x):
        return lambda x: x * 2.0

    unknown = _module("not_in_sys_modules", "import enum\nclass E(enum.IntEnum):\n    A = 1\n")

    @intrinsic
    def nothing(typingctx, x):
        return None

    for name, value in [("stub", stub), ("E", unknown.E), ("nothing", nothing)]:
        with pytest.raises(dc.Uncacheable):
            dc.fingerprint(nb.njit(_function(f"def k(x):\n    return {name}(x)\n", "k", {name: value})))
