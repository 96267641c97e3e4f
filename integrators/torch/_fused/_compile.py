"""The fused chain kernel compiled for real GPU targets on any machine, GPU or not: registers, memory, spills.

Triton's compiler takes an explicit target (``GPUTarget("cuda", 80 | 90, 32)``) and ships its own
``ptxas`` and ``cuobjdump``, so a launch that :func:`integrators.torch._fused.launch_of` builds from CPU
tensors (the cuda block size and warps of :func:`integrators.torch._fused.launch_config`) compiles to the
cubin a GPU would run, with the specialization the torch backend launches: the same argument types,
16-byte aligned pointers (torch's allocations) and constexprs. :func:`compile_launch` reports the
kernel's registers, shared memory, stack frame and local-memory instructions (``STL``/``LDL`` in its SASS:
a spill), read with the bundled ``cuobjdump``.

Compiling needs Triton's compiler, not its interpreter (chosen when Triton is imported): run it where
``TRITON_INTERPRET`` is ``0`` (``python -m integrators.torch._fused._compile``, which reads one JSON list of
:class:`Config` fields from stdin and writes one JSON line per configuration and target).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

ARCHS = (80, 90)  # A100, H100/H200
_RESOURCES = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
_LOCAL_OPS = re.compile(r"\b(STL|LDL)(\.\w+)*\b")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True)
class Config:
    """One specialization of the kernel: what a run launches it with (``plan`` one of the plans with a rule:
    ``full``, ``iid``, or a partition, ``rr``/``sms``; ``batch`` its batch size)."""

    scheme: str
    d: int
    n_data: int = 2
    plan: str = "sms"
    batch: int = 1
    prior: bool = False
    control_variate: bool = False
    histogram: bool = False
    keep: bool = False
    full_moments: bool = False
    arch: int = 90
    block: int | None = None  # None: the launch's (launch_config); else a candidate to measure
    num_warps: int | None = None
    maxnreg: int | None = None  # a register cap (the launch sets none): a spill planted for the checks

    def label(self) -> str:
        flags = [name for name in FLAGS if getattr(self, name)]
        return (f"{self.scheme} {self.plan} d={self.d} n={self.n_data} b={self.batch} sm_{self.arch}"
                + (f" +{'+'.join(flags)}" if flags else "")
                + ("" if self.block is None else f" BLOCK={self.block}")
                + ("" if self.num_warps is None else f" warps={self.num_warps}")
                + ("" if self.maxnreg is None else f" maxnreg={self.maxnreg}"))


FLAGS = ("prior", "control_variate", "histogram", "keep", "full_moments")


def largest(scheme: str, d: int, arch: int) -> Config:
    """The most a launch of ``d`` coordinates holds: every observer, the prior, the control variate and a
    partition of the most data the kernel shuffles, in one batch (the most force terms a step)."""
    from integrators.plans import SMALL_SHUFFLE

    return Config(scheme, d, n_data=SMALL_SHUFFLE, plan="sms", batch=SMALL_SHUFFLE, arch=arch,
                  **dict.fromkeys(FLAGS, True))


@dataclass
class Resources:
    """What ``cuobjdump`` reads from one compiled kernel (per thread: registers, stack frame bytes, local
    memory bytes; per block: shared memory bytes), its local-memory instructions and ptxas's spill bytes."""

    config: Config
    block: int
    num_warps: int
    registers: int
    stack: int
    shared: int
    local: int
    local_ops: int
    spill_bytes: int
    seconds: float
    constexprs: dict = field(default_factory=dict)

    @property
    def spills(self) -> bool:
        """Registers spilled to local memory (ptxas's spill stores and loads)."""
        return self.spill_bytes > 0


def bundled_tool(name: str) -> str | None:
    """The path of a tool Triton ships for CUDA (``ptxas``, ``cuobjdump``), or None where it does not."""
    try:
        from triton import knobs
        path = getattr(knobs.nvidia, name).path
    except (ImportError, AttributeError, RuntimeError):
        return None
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def unavailable() -> str | None:
    """Why the kernel cannot be compiled for a GPU target here (None: it can)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return "triton is not installed"
    version = __import__("triton").__version__
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        for arch in ARCHS:  # the ptxas Triton runs for each target (sm_90 has its own)
            path = get_ptxas(arch).path
            if not (path and os.path.isfile(path) and os.access(path, os.X_OK)):
                return f"triton's bundled ptxas for sm_{arch} is missing (triton {version})"
    except (ImportError, AttributeError, RuntimeError) as error:
        return f"triton {version} has no CUDA backend with a bundled ptxas ({error})"
    if bundled_tool("cuobjdump") is None:
        return f"triton's bundled cuobjdump is missing (triton {version})"
    return None


def _type_of(arg) -> str:
    """Triton's signature type of a launch argument (as its launcher specializes it)."""
    import torch

    if isinstance(arg, torch.Tensor):
        return {torch.float64: "*fp64", torch.float32: "*fp32", torch.int64: "*i64", torch.int32: "*i32"}[arg.dtype]
    if isinstance(arg, bool):
        return "i1"
    if isinstance(arg, int):
        return "i32" if -2**31 <= arg < 2**31 else "i64"
    raise TypeError(f"launch argument of type {type(arg).__name__} has no Triton type here")


def launch_for(config: Config):
    """The cuda :class:`integrators.torch._fused.Launch` the torch backend makes for ``config`` (CPU tensors)."""
    from integrators._backends import Torch
    from integrators._spec import RunSpec
    from integrators.targets import GaussianTarget
    from integrators.torch._chains import _Chains
    from integrators.torch._fused import launch_of

    rng = np.random.default_rng(0)
    d, n_data = config.d, config.n_data
    roots = rng.normal(size=(n_data, d, d)) / np.sqrt(d)
    prior = dict(prior_precision=np.eye(d), prior_mean=np.zeros(d)) if config.prior else {}
    target = GaussianTarget(rng.normal(size=(n_data, d)), roots @ roots.transpose(0, 2, 1) + 0.5 * np.eye(d), **prior)
    spec = RunSpec.from_options(
        target, config.scheme, config.plan, h=0.1, gamma=1.0, n_chains=4, n_steps=8, burn_in=2,
        batch_size=None if config.plan == "full" else config.batch, control_variate=config.control_variate,
        keep=2 if config.keep else 0, full_moments=config.full_moments,
        histogram=(-3.0, 3.0, 11) if config.histogram else None, backend=Torch(kernel="torch"))
    run = _Chains(spec, None)
    launch = launch_of([spec], [run.x], [run.v], [run.obs], run.path.keys, run.plan_rng.keys, block=config.block,
                       device="cuda")
    return launch if config.num_warps is None else replace(launch, num_warps=config.num_warps)


def compile_launch(launch, arch: int, *, maxnreg: int | None = None) -> tuple[object, float]:
    """``(compiled kernel, seconds)``: ``launch`` compiled for ``sm_<arch>`` (Triton's on-disk cache answers
    a kernel compiled before: seconds near zero)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from integrators.torch._fused import INTERPRETED
    from integrators.torch._fused._kernel import chain_kernel

    if INTERPRETED:
        raise RuntimeError("Triton was imported with TRITON_INTERPRET=1 (its interpreter): compile in a process "
                           "started with TRITON_INTERPRET=0 (python -m integrators.torch._fused._compile)")
    names = chain_kernel.arg_names
    signature = dict(zip(names, map(_type_of, launch.args), strict=False))
    signature.update({name: "constexpr" for name in launch.constexprs})
    assert list(signature) == names, "the launch's arguments are not the kernel's"
    aligned = [["tt.divisibility", 16]]  # torch's allocations: 16-byte aligned pointers, as the launcher sees them
    attrs = {(i,): aligned for i, name in enumerate(names) if signature[name].startswith("*")}
    source = ASTSource(fn=chain_kernel, signature=signature, constexprs=launch.constexprs, attrs=attrs)
    start = time.perf_counter()
    options = dict(num_warps=launch.num_warps) | ({} if maxnreg is None else dict(maxnreg=maxnreg))
    kernel = triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options)
    return kernel, time.perf_counter() - start


def resources(config: Config) -> Resources:
    """Compile ``config`` and read its resources with the bundled ``cuobjdump``."""
    launch = launch_for(config)
    kernel, seconds = compile_launch(launch, config.arch, maxnreg=config.maxnreg)
    cuobjdump = bundled_tool("cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "chain_kernel.cubin")
        with open(cubin, "wb") as f:
            f.write(kernel.asm["cubin"])
        usage = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=True).stdout
    found = _RESOURCES.search(usage)
    if found is None:
        raise RuntimeError(f"cuobjdump -res-usage printed no resource line:\n{usage}")
    registers, stack, shared, local = map(int, found.groups())
    local_ops = len(_LOCAL_OPS.findall(sass))
    spill_bytes = _spill_bytes(kernel.asm["ptx"], config.arch) if local_ops or stack or local else 0
    constexprs = {k: v for k, v in launch.constexprs.items() if isinstance(v, bool | int)}
    return Resources(config, constexprs["BLOCK"], launch.num_warps, registers, stack,
                     max(shared, int(kernel.metadata.shared)), local, local_ops, spill_bytes, seconds, constexprs)


def _spill_bytes(ptx: str, arch: int) -> int:
    """Spill stores and loads in bytes, as the ptxas Triton uses for ``arch`` reports them (``-v``, Triton's
    register-allocation option): local memory that is not a spill (a stack array) is not counted."""
    from triton.backends.nvidia.compiler import get_ptxas

    target = re.search(r"^\.target\s+(\w+)", ptx, re.MULTILINE).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "chain_kernel.ptx")
        with open(source, "w") as f:
            f.write(ptx)
        log = subprocess.run([get_ptxas(arch).path, "-v", "--regAllocOptLevel=2", f"--gpu-name={target}", source,
                              "-o", source + ".o"], capture_output=True, text=True, check=True).stderr
    found = _SPILLS.search(log)
    if found is None:
        raise RuntimeError(f"ptxas -v printed no spill line:\n{log}")
    return int(found.group(1)) + int(found.group(2))


def run_isolated(configs: list[Config], *, timeout: float = 1800, env: dict | None = None, on_row=None) -> list[dict]:
    """:func:`resources` of each config in a fresh Python process with Triton's compiler (not its interpreter):
    one dict per config (``Resources``' fields, or ``error``: the compiler's message), each also passed to
    ``on_row`` as it comes."""
    env = dict(os.environ if env is None else env, TRITON_INTERPRET="0", TRITON_DEFAULT_FP_FUSION="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    rows = []
    with tempfile.TemporaryFile("w+") as err, subprocess.Popen(
            [sys.executable, "-m", "integrators.torch._fused._compile"], cwd=root, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err) as proc:
        deadline = time.monotonic() + timeout
        proc.stdin.write(json.dumps([asdict(c) for c in configs]))
        proc.stdin.close()
        for line in proc.stdout:  # the timeout is checked between rows: a guard, not a measurement
            if line.startswith("{"):
                rows.append(json.loads(line))
                if on_row is not None:
                    on_row(rows[-1])
            if time.monotonic() > deadline:
                proc.kill()
                break
        code = proc.wait()
        err.seek(0)
        if code != 0 or len(rows) != len(configs):
            raise RuntimeError(f"the compilation process ended with {code} after {len(rows)} of "
                               f"{len(configs)} configurations:\n{err.read()[-4000:]}")
    return rows


def main() -> None:
    configs = [Config(**fields) for fields in json.load(sys.stdin)]
    for config in configs:
        try:
            found = resources(config)
            row = dict(asdict(found), spills=found.spills)
        except Exception as error:  # a compile error is the finding: report it, go on with the others
            row = dict(config=asdict(config), error=f"{type(error).__name__}: {error}"[:4000])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
