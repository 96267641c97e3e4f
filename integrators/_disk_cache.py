"""Compiled kernels kept on disk, keyed on the code they were compiled from: a machine compiles a kernel once.

The kernels are closures built per scheme, target force, batch rule and test function
(:mod:`integrators._kernel`, :mod:`bias._coupled`, :mod:`integrators._ghmc`), which Numba's own
``cache=True`` cannot hold: its index key pickles a closure's cells, and a Numba function pickles
with a new identity in every process, so every process misses; and it keys a function on its own
file only, not on the functions it calls.  :func:`disk_cached` gives such a function a cache
keyed instead on a fingerprint (:func:`fingerprint`) of everything its machine code depends on:

- the toolkit's own source (every ``.py`` file of its packages, hashed once per process): a
  change anywhere in the toolkit recompiles every kernel once;
- each function's own bytecode and constants (so a module reloaded after an edit is seen);
- user code reached from the kernel (a scheme's step, a target's gradients, a plan's rule, test
  functions), by its bytecode, constants, defaults, closure cells and the globals it reads,
  recursively, a user module by the attributes the function may read from it; anything the walk
  cannot describe (an object of a user class, an intrinsic, a plain Python function that Numba
  code calls, such as an ``@overload`` stub) leaves the kernel in memory (fail closed);
- the Python, Numba, llvmlite and numpy versions (the folder's name), Numba's settings that change
  machine code (``NUMBA_OPT``, ``NUMBA_BOUNDSCHECK``, ...), the argument types and the CPU (target
  triple, CPU name and features: Numba's own ``magic_tuple``).

Each (function, fingerprint, argument types) has an index and a data file of its own, written
through a temporary file and an atomic rename, so two processes compiling the same kernel at
once write the same bytes; every data file carries a SHA-256 of its contents, and an entry whose
check fails or that does not load is deleted and compiled again, never used.  Code whose
fingerprint cannot be taken (a global of a kind the walk does not know, such as an arbitrary
object) or a kernel whose argument types name a Numba function compiles in memory as before.

The folder is ``$NUMBA_CACHE_DIR/sms-langevin`` when ``NUMBA_CACHE_DIR`` is set, else
``$SMS_LANGEVIN_CACHE_DIR``, else the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``,
then ``sms-langevin/kernels``), so a read-only install works.  ``SMS_LANGEVIN_DISK_CACHE=0``
turns it off.  A folder that cannot be written is reported once (a warning) and kernels then
compile in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import sysconfig
import types
import warnings
from pathlib import Path

import numba as nb
import numpy as np
from numba.core import types as nbtypes
from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile

from integrators import _user_code
from integrators._files import source_bytes

# every package of the toolkit: its source is hashed; the user-code boundary itself is _user_code's list
TOOLKIT_PACKAGES = (*_user_code.TOOLKIT_PACKAGES, "data_sets")
_ROOT = Path(__file__).resolve().parent.parent


class Uncacheable(Exception):
    """Raised by :func:`fingerprint` for a value it cannot key (the kernel then compiles in memory)."""


# ------------------------------------------------------------------------------ where and what
def cache_folder() -> Path:
    """The folder of this installation's kernels: the root (see the module) and a subfolder named by
    the Python, Numba, llvmlite and numpy versions and the toolkit's source hash."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        root = Path(os.environ["NUMBA_CACHE_DIR"]) / "sms-langevin"
    elif os.environ.get("SMS_LANGEVIN_CACHE_DIR"):
        root = Path(os.environ["SMS_LANGEVIN_CACHE_DIR"])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(base) / "sms-langevin" / "kernels"
    import llvmlite

    versions = (f"py{sys.version_info[0]}{sys.version_info[1]}-numba{nb.__version__}-llvmlite{llvmlite.__version__}"
                f"-numpy{np.__version__}")
    return root / f"{versions}-{toolkit_hash()[:16]}"


def enabled() -> bool:
    """Whether kernels are kept on disk (``SMS_LANGEVIN_DISK_CACHE=0`` turns it off)."""
    return os.environ.get("SMS_LANGEVIN_DISK_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


_TOOLKIT_HASH: list = []


def toolkit_hash() -> str:
    """SHA-256 of every ``.py`` file of the toolkit's packages (relative path and bytes), once per process."""
    if not _TOOLKIT_HASH:
        h = hashlib.sha256()
        for package in TOOLKIT_PACKAGES:
            folder = _ROOT / package
            for path in sorted(folder.rglob("*.py")) if folder.is_dir() else ():
                if (text := source_bytes(path)) is not None:
                    h.update(str(path.relative_to(_ROOT)).encode())
                    h.update(text)
        _TOOLKIT_HASH.append(h.hexdigest())
    return _TOOLKIT_HASH[0]


# ----------------------------------------------------------------------------- the fingerprint
_INSTALLED = tuple(os.path.realpath(p) for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib",
                                                                                     "purelib", "platlib")})


def _is_toolkit(module_name) -> bool:
    return isinstance(module_name, str) and module_name.split(".")[0] in TOOLKIT_PACKAGES


def _toolkit_source(fn) -> bool:
    """Whether ``fn`` is written in a toolkit file at module or class level (not a closure, not generated
    code): the toolkit's source hash then covers what it calls."""
    return (_is_toolkit(fn.__module__) and "<locals>" not in fn.__qualname__
            and fn.__code__.co_filename.startswith(str(_ROOT)))


def fingerprint(obj, dispatchers: list | None = None) -> str:
    """SHA-256 of everything the machine code compiled from ``obj`` depends on, apart from the toolkit's
    source and the versions (the folder's name): see the module.  The Numba functions reached are
    appended to ``dispatchers`` when given.  Raises :class:`Uncacheable`."""
    h = hashlib.sha256()
    seen: dict = {}
    if isinstance(obj, types.FunctionType):
        seen[id(obj)] = (0, obj)
        _walk_function(obj, h, seen, compiled=True)
    else:
        _walk(obj, h, seen)
    if dispatchers is not None:
        dispatchers.extend(value for _, value in seen.values() if isinstance(value, nb.core.dispatcher.Dispatcher))
    return h.hexdigest()


def _dtype(dtype) -> str:
    return repr(dtype.descr if dtype.fields else dtype.str)  # (a record's fields by name and type)


def _walk(obj, h, seen) -> None:  # noqa: C901 (one case per kind of value)
    put = h.update
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        put(f"{type(obj).__name__}:{obj!r};".encode())
        return
    if id(obj) in seen:
        put(f"@{seen[id(obj)][0]};".encode())
        return
    seen[id(obj)] = (len(seen), obj)  # (the object too: its id stays its own while the walk runs)
    if isinstance(obj, (tuple, list)):
        put(f"{type(obj).__module__}.{type(obj).__qualname__}[{len(obj)}".encode())  # (a namedtuple by class)
        if type(obj) not in (tuple, list):
            _walk(type(obj), h, seen)
        for item in obj:
            _walk(item, h, seen)
        put(b"]")
    elif type(obj) is dict:
        put(f"dict[{len(obj)}".encode())
        for key in sorted(obj, key=repr):
            _walk(key, h, seen)
            _walk(obj[key], h, seen)
        put(b"]")
    elif type(obj) is np.ndarray:
        put(f"ndarray:{_dtype(obj.dtype)}:{obj.shape};".encode())
        put(hashlib.sha256(np.ascontiguousarray(obj).tobytes()).digest())
    elif isinstance(obj, np.generic) and not obj.dtype.fields:
        put(f"{_dtype(obj.dtype)}:{obj.item()!r};".encode())
    elif isinstance(obj, np.dtype):
        put(f"dtype:{_dtype(obj)};".encode())
    elif isinstance(obj, np.ufunc):
        put(f"ufunc:{obj.__name__};".encode())
    elif isinstance(obj, nb.core.dispatcher.Dispatcher):
        put(f"dispatcher:{type(obj).__name__}(".encode())
        _walk_function(obj.py_func, h, seen, compiled=True)
        _walk({k: v for k, v in obj.targetoptions.items() if k != "cache"}, h, seen)
        put(f"{sorted((k, str(v)) for k, v in (obj.locals or {}).items())};".encode())
        if not obj._can_compile:  # explicit signatures only
            put(f"{[str(sig) for sig in obj.signatures]};".encode())
        put(f"{getattr(obj, '_compiler', None) and obj._compiler.pipeline_class};)".encode())
    elif isinstance(obj, types.FunctionType):
        _walk_function(obj, h, seen, compiled=False)
    elif isinstance(obj, types.ModuleType):
        _walk_module(obj, h, seen, ())
    elif isinstance(obj, type):
        if not (_is_toolkit(obj.__module__) or obj.__module__ == "builtins" or _installed_module(obj.__module__)):
            raise Uncacheable(f"the class {obj.__qualname__!r} of module {obj.__module__!r}")
        put(f"class:{obj.__module__}.{obj.__qualname__};".encode())
    elif isinstance(obj, nbtypes.Type):
        put(f"nbtype:{obj};".encode())
    elif isinstance(obj, types.BuiltinFunctionType) and _installed_module(getattr(obj, "__module__", None) or ""):
        put(f"builtin:{obj.__module__}.{obj.__qualname__};".encode())
    else:  # an intrinsic, a typed container, a user object: what it compiles to is not known here
        raise Uncacheable(f"a value of type {type(obj).__module__}.{type(obj).__qualname__}")


def _walk_function(fn, h, seen, *, compiled: bool) -> None:
    """A function's code, defaults, closure cells and the globals it reads.  ``compiled``: the Python
    function of a Numba function; otherwise a plain function that Numba code refers to, which compiles
    to something its body does not say (an ``@overload`` stub, say) unless it is the toolkit's."""
    toolkit = _toolkit_source(fn)
    if not compiled and not toolkit:
        raise Uncacheable(f"the plain Python function {fn.__module__}.{fn.__qualname__} (an @overload stub or "
                          f"register_jitable: what it compiles to is not its body)")
    h.update(f"function:{fn.__module__}.{fn.__qualname__}(".encode())
    _walk_code(fn.__code__, h, seen)
    if toolkit:  # the toolkit's source hash covers what it calls; its own code is keyed (a reload changes it)
        h.update(b")")
        return
    _walk(fn.__defaults__, h, seen)
    _walk(fn.__kwdefaults__, h, seen)
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            value = "<empty cell>"
        _walk(value, h, seen)
    names = _global_names(fn.__code__)
    for name in sorted(names):
        if name in fn.__globals__:
            h.update(f"global:{name}=".encode())
            value = fn.__globals__[name]
            if isinstance(value, types.ModuleType):
                _walk_module(value, h, seen, names)
            else:
                _walk(value, h, seen)
    h.update(b")")


def _global_names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _walk_code(code, h, seen) -> None:
    h.update(b"code(")
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_argcount,
                   code.co_kwonlyargcount)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _walk_code(const, h, seen)
        else:
            h.update(f"{type(const).__name__}:{const!r};".encode())
    h.update(b")")


def _installed_module(name: str) -> bool:
    """Whether the module ``name`` is Python's or an installed package's (keyed by name and version)."""
    if name in sys.builtin_module_names:
        return True
    path = getattr(sys.modules.get(name), "__file__", None)
    return path is not None and os.path.realpath(path).startswith(_INSTALLED)


def _walk_module(module, h, seen, names) -> None:
    """A module a function reads: the toolkit's and installed ones by name and version; a user's by the
    attributes the function may read from it (``names``: the function's global and attribute names)."""
    name = module.__name__
    if _is_toolkit(name) or _installed_module(name):
        h.update(f"module:{name}:{getattr(module, '__version__', '')};".encode())
        return
    h.update(f"user module:{name}(".encode())
    for attr in sorted(names):
        if hasattr(module, attr):
            h.update(f"{attr}=".encode())
            _walk(getattr(module, attr), h, seen)
    h.update(b")")


# ---------------------------------------------------------------------------------- the cache
class _SumCheckedFile(IndexDataCacheFile):
    """Numba's index and data files, each data file prefixed with the SHA-256 of the rest."""

    def _dump(self, obj):
        data = super()._dump(obj)
        return hashlib.sha256(data).digest() + data

    def _load_data(self, name):
        import pickle

        with open(self._data_path(name), "rb") as f:
            raw = f.read()
        digest, data = raw[:32], raw[32:]
        if hashlib.sha256(data).digest() != digest:
            raise ValueError(f"corrupt cache entry {name!r}: its checksum does not match")
        return pickle.loads(data)

    def _load_index(self):
        path = self._index_path
        import pickle

        try:
            with open(path, "rb") as f:
                raw = f.read()
            digest, data = raw[:32], raw[32:]
            if hashlib.sha256(data).digest() != digest:
                return {}  # corrupt: a miss, and the save after compiling replaces it
            version, stamp, overloads = pickle.loads(data)
        except Exception:  # missing, unreadable or not ours: a miss
            return {}
        return overloads if version == self._version and stamp == self._source_stamp else {}

    def _save_index(self, overloads):
        import pickle

        data = pickle.dumps((self._version, self._source_stamp, overloads), protocol=-1)
        with self._open_for_write(self._index_path) as f:
            f.write(hashlib.sha256(data).digest() + data)

    def remove(self):
        for path in (self._index_path, *(self._data_path(self._data_name(i)) for i in (1, 2, 3))):
            with contextlib.suppress(OSError):
                os.unlink(path)


KEEP_FOLDERS = 16  # the most recently written code versions kept; older ones are deleted as a new one starts


def prune_old_versions(root: Path, current: str | None = None) -> None:
    """Delete all but the :data:`KEEP_FOLDERS` most recently used code versions under ``root`` that share
    ``current``'s Python, Numba, llvmlite and numpy versions (each edit of the toolkit starts one; other
    environments' folders are theirs).  A process still reading a deleted one compiles again."""
    import shutil

    prefix = current.rsplit("-", 1)[0] + "-" if current else ""
    try:
        folders = sorted((p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and "-numba" in p.name
                          and p.name.startswith(prefix)), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in folders[KEEP_FOLDERS:]:
        shutil.rmtree(old, ignore_errors=True)


class _Locator:
    """What Numba's cache reads off a locator: the folder, made on first save."""

    def __init__(self, folder: Path, py_file: str):
        self._folder, self._py_file = folder, py_file

    def ensure_cache_path(self):
        if not self._folder.is_dir():
            self._folder.mkdir(parents=True, exist_ok=True)
            prune_old_versions(self._folder.parent, self._folder.name)

    def get_cache_path(self):
        return str(self._folder)


class _Impl(CompileResultCacheImpl):
    def __init__(self, py_func, folder: Path, name: str):  # (no source-file locator: the key is the code's)
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = _Locator(folder, py_func.__code__.co_filename)
        self._filename_base = name
        self.dispatchers: list = []  # the Numba functions the kernel reaches, from the last key taken

    def check_cachable(self, cres) -> bool:
        """Numba refuses code holding "dynamic globals" (addresses of this process's objects).  A kernel
        passing a Numba function as a value (the force to the step, the test functions to the observers)
        holds that function object's address; its calls are bound at compile time and the address is read
        only if the function object is boxed (returned to Python, printed), which no kernel of the toolkit
        does (see the sampling guide for user code).  Code whose every dynamic global is such an address is
        kept; any other (a large global array, a first-class function pointer) is not."""
        if any(not x.can_cache for x in cres.lifted):
            return False
        names = getattr(cres.library, "_dynamic_globals", None)
        if names is None:  # (another Numba: fail closed)
            return not cres.library.has_dynamic_globals
        ids = {id(d) for d in self.dispatchers}
        for name in names:
            found = _DYNAMIC_GLOBAL.fullmatch(name)  # (linking may append ".1" to a repeated name)
            if found is None or int(found.group(1), 16) not in ids:
                return False
        return True


_DYNAMIC_GLOBAL = re.compile(r"numba\.dynamic\.globals\.([0-9a-f]+)(?:\.\d+)?")
_UNSTABLE_TYPE = re.compile(r" at 0x|#[0-9a-f]{6,}")  # an address in a type's name: a jitclass, a function

_WARNED: set = set()
_LISTENERS: list = []  # callables told "compiling <name>" when a kernel misses the cache (process-wide)


class KeyedCache(FunctionCache):
    """A Numba function cache keyed on a fingerprint (see the module), taken again at every lookup and save:
    globals or settings that changed since the kernel was made key the code compiled with them."""

    def __init__(self, dispatcher, name: str):
        self._name, self._dispatcher, self._py_func = name, dispatcher, dispatcher.py_func
        self._folder = cache_folder()
        self._impl = _Impl(self._py_func, self._folder, name)
        self._cache_path = str(self._folder)
        self.enable()

    @property
    def _key(self) -> str | None:
        dispatchers: list = []
        try:
            code = fingerprint(self._dispatcher, dispatchers)
        except Uncacheable:
            return None
        self._impl.dispatchers = dispatchers
        return hashlib.sha256(f"{code}|{_compiler_settings()}".encode()).hexdigest()

    def _file(self, sig, codegen):
        key = self._key
        if key is None or _UNSTABLE_TYPE.search(str(sig)):
            return None, None  # no key stable across processes
        full = (key, str(sig), codegen.magic_tuple())  # (a CPU of its own: a folder shared by several machines)
        name = hashlib.sha256(repr(full).encode()).hexdigest()[:32]
        return _SumCheckedFile(self._cache_path, f"{self._name}-{name}", key), full

    def flush(self):
        pass  # (entries are never rewritten in place: a new key is a new file)

    def load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        target_context.refresh()
        file, full = self._file(sig, target_context.codegen())
        found = None
        if file is not None:
            try:
                data = file.load(full)
            except Exception:  # corrupt, truncated or unreadable: deleted, compiled again, never used
                file.remove()
                data = None
            try:
                found = None if data is None else self._impl.rebuild(target_context, data)
            except Exception:  # (not loadable here, say another environment's: a miss, the entry kept)
                found = None
            if found is not None:
                with contextlib.suppress(OSError):
                    os.utime(self._folder)  # recently used: kept by prune_old_versions
        if found is None:
            for listener in list(_LISTENERS):
                listener(self._name)
        return found

    def save_overload(self, sig, data):
        if not self._enabled:
            return
        file, full = self._file(sig, data.codegen)
        if file is None or not self._impl.check_cachable(data):
            return
        try:
            self._impl.locator.ensure_cache_path()
            file.save(full, self._impl.reduce(data))
        except OSError as exc:
            if self._cache_path not in _WARNED:
                _WARNED.add(self._cache_path)
                warnings.warn(f"compiled kernels cannot be kept in {self._cache_path} ({exc}); they compile in every "
                              f"process (set NUMBA_CACHE_DIR or SMS_LANGEVIN_CACHE_DIR to a writable folder)",
                              RuntimeWarning, stacklevel=2)


def disk_cached(dispatcher, name: str | None = None):
    """``dispatcher`` (a Numba function, not yet compiled) with its compiled code kept on disk, keyed on
    :func:`fingerprint` of it; unchanged where the cache is off or the fingerprint cannot be taken.
    Returns the dispatcher."""
    if not enabled():
        return dispatcher
    try:
        fingerprint(dispatcher)
    except Uncacheable:
        return dispatcher
    py_func = dispatcher.py_func
    label = name or py_func.__qualname__.replace("<locals>.", "").replace("<", "").replace(">", "")
    dispatcher._cache = KeyedCache(dispatcher, label)
    return dispatcher


def describe_state() -> str:
    """One line for a command's start: whether kernels will compile first, and where they are kept."""
    if not enabled():
        return "kernels compile in every process (SMS_LANGEVIN_DISK_CACHE=0)"
    folder = cache_folder()
    kept = len(list(folder.glob("*.nbi"))) if folder.is_dir() else 0
    if not kept:
        return (f"first run of this code on this machine: each kernel compiles before its first unit (about 25 s per "
                f"scheme, once; kept in {folder})")
    return f"{kept} compiled kernels found in {folder} (a kernel not among them compiles first, once)"


def _compiler_settings() -> tuple:
    """Numba's settings from the environment that change machine code (``NUMBA_OPT``, ``NUMBA_BOUNDSCHECK``, ...):
    part of every key, so a run with other settings never loads code compiled without them."""
    from numba.core import config

    names = ("OPT", "BOUNDSCHECK", "LOOP_VECTORIZE", "SLP_VECTORIZE", "ENABLE_AVX", "CPU_NAME", "CPU_FEATURES",
             "DEBUGINFO_DEFAULT", "FULL_TRACEBACKS", "DISABLE_JIT")
    return tuple((name, str(getattr(config, name, None))) for name in names)


def njit_cached(**options):
    """``numba.njit(**options)`` with :func:`disk_cached`: the decorator of the toolkit's module-level kernels."""
    def decorate(fn):
        return disk_cached(nb.njit(**options)(fn))

    return decorate


@contextlib.contextmanager
def on_compile(listener):
    """Call ``listener(name)`` whenever a kernel misses the disk cache (it is about to compile) inside the block."""
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)
