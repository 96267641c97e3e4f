"""The backends a run spec runs on: the Numba kernel (:class:`Numba`) and the tensor backend
(:class:`Torch`).  Each estimates a spec's memory, names its limit, refuses by name what it cannot
run, and hands checked specs to its adapter (:mod:`integrators._chains`,
:mod:`integrators.torch._chains`)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from integrators._memory import device_memory_bytes
from integrators._options import set_fields
from integrators._rng import STATE_WORDS
from integrators._validation import at_least, instance_of, optional
from integrators.plans import plan_rule

if TYPE_CHECKING:
    from integrators._spec import RunSpec

TILE_SIZE = 256  # about this many chains advance together in the Numba kernel (their arrays stay in L1)
TORCH_DTYPES = ("float64", "float32")


def local_cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it), at least 1."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Numba:
    """The Numba kernel (:mod:`integrators._chains`), the default backend of a run spec.

    It runs every option of :func:`integrators.sample`; chains advance in tiles of about 256 (their
    arrays stay in the L1 cache) spread over worker threads, and every chain has its own random
    streams, so results do not depend on the number of threads.

    Parameters
    ----------
    threads : int or None, default None
        Worker threads, at least 1 (``None``: every core this process may run on,
        :func:`local_cores`).  An executor running units side by side gives each unit its share
        of the cores, and the unit passes it here.

    Attributes
    ----------
    NAME : str
        ``"numba"``, the backend's name in messages and metadata.

    Raises
    ------
    ValueError
        If ``threads`` is neither ``None`` nor an integer ``>= 1``.
    """

    threads: int | None = None
    NAME = "numba"

    def __post_init__(self):
        set_fields(self, threads=optional(at_least(1))("threads", self.threads))

    def resolved_threads(self) -> int:
        """The number of worker threads a run uses.

        Returns
        -------
        int
            ``threads`` if given, else :func:`local_cores`.
        """
        return self.threads if self.threads is not None else local_cores()

    def refuse(self, spec: RunSpec) -> None:
        """Refuse, by name, what the kernel cannot run: a scheme written only in torch.

        The kernel runs every other option.

        Parameters
        ----------
        spec : RunSpec
            The run, checked field by field.

        Raises
        ------
        ValueError
            If the scheme has no Numba ``step`` (``step=None`` with a ``TORCH_STEP``).
        """
        if spec.scheme_module.step is None:
            raise ValueError(f"scheme {spec.scheme_module.NAME!r} is written only in torch (step=None, TORCH_STEP): "
                             f"the Numba backend cannot run it; pass backend=Torch()")

    def memory_bytes(self, spec: RunSpec, loop: str = "sample", *, n_chunks: int = 1) -> float:
        """About how many bytes of arrays ``spec`` holds on the kernel, for each loop that runs it.

        Parameters
        ----------
        spec : RunSpec
            The run.
        loop : {"sample", "coupled", "ghmc"}, default "sample"
            What runs the spec: :func:`integrators.sample` (and the strong-order ladder, made of
            such runs), :func:`bias._coupled.coupled_run` or :func:`integrators.sms_ghmc`.
        n_chunks : int, default 1
            The coupled run's time chunks per chain.

        Returns
        -------
        float
            ``"sample"``: every per-chain array counted about twice (the initial layout and the
            threads' stacks), plus per thread the histogram's counts and a tile's batch and
            permutation buffers over the data; ``"coupled"``: both chains' chunk sums of the test
            functions (default two), the state and the divergence record; ``"ghmc"``: the state,
            proposal, sums and random streams.

        Raises
        ------
        ValueError
            If ``loop`` is not one of the three.
        """
        obs, dim, n = spec.observers, spec.target.dim, spec.n_chains
        if loop == "coupled":
            n_tests = obs.n_test_functions if obs.test_functions is not None else 2  # coupled's default pair
            return 8.0 * n * (2 * n_chunks * n_tests + 2 * dim + 1)
        if loop == "ghmc":
            return 8.0 * n * (7 * dim + 4 * STATE_WORDS)
        if loop != "sample":
            raise ValueError(f"unknown loop {loop!r}; choose from 'sample', 'coupled', 'ghmc'")
        # every per-chain array about twice (the initial layout and the threads' stacks); per thread, the
        # histogram's counts and a tile's batch and permutation buffers over the data (int32, two of them)
        per_chain = (6 * dim + (dim * dim if obs.full_moments else 0) + obs.n_test_functions + obs.keep * dim
                     + 4 * STATE_WORDS)
        per_thread = obs.n_bins + min(n, TILE_SIZE) * spec.target.n_data
        n_threads = min(self.resolved_threads(), math.ceil(n / TILE_SIZE))
        return 8.0 * (2 * n * per_chain + n_threads * per_thread)

    def memory_limit(self) -> float | None:
        """The memory a run may fill.

        Returns
        -------
        None
            The memory available on this machine now applies (:func:`integrators._memory.check_fits`).
        """
        return None  # check_fits' default: the memory available now

    def run(self, specs: list[RunSpec]) -> list:
        """Run checked specs on the kernel (:func:`integrators._chains.run_specs`).

        Specs that share a seed and differ only in scheme and plan share one Brownian path, drawn
        once per step for all of them (:func:`integrators.sample_together`).

        Parameters
        ----------
        specs : list of RunSpec
            The runs.

        Returns
        -------
        list of SampleResult
            One result per spec, in order.
        """
        from integrators._chains import run_specs

        return run_specs(specs)


@dataclass(frozen=True)
class Torch:
    """The tensor backend (:mod:`integrators.torch._chains`): the chains as a tensor dimension.

    Parameters
    ----------
    device : str, default "cpu"
        A torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``), checked to exist here.
    dtype : str, default "float64"
        ``"float64"`` or ``"float32"`` (a ``torch.dtype`` is accepted); observers accumulate in
        float64 either way.
    compile : bool or str, default False
        ``True`` (or a ``torch.compile`` backend's name) runs each step compiled.
    kernel : {"auto", "triton", "torch"}, default "auto"
        ``"triton"``: the fused chain kernel (:mod:`integrators.torch._fused`; on a machine without
        CUDA it runs in Triton's interpreter, slowly), refused by name where it cannot run the spec;
        ``"torch"``: the tensor step; ``"auto"``: the fused kernel on cuda where it can run the
        spec, else the tensor step. The result's ``meta["kernel"]`` says which ran, and why.

    Attributes
    ----------
    NAME : str
        ``"torch"``, the backend's name in messages and metadata.

    Raises
    ------
    ImportError
        If torch is not installed (the message says how to install it).
    ValueError
        If the device is unknown or not available, the dtype is neither float64 nor float32, or
        ``compile`` is neither a bool nor a ``torch.compile`` backend's name, or ``kernel`` is
        unknown (or ``"triton"`` without Triton installed).
    """

    device: str = "cpu"
    dtype: str = "float64"
    compile: bool | str = False
    kernel: str = "auto"
    NAME = "torch"

    def __post_init__(self):
        try:
            from integrators.torch._chains import resolve_compile, resolve_device, resolve_dtype, resolve_kernel
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] != "torch":
                raise
            from integrators._install import install_command

            raise ImportError(f"the torch backend (Torch()) needs torch: {install_command('torch')}") from None

        set_fields(self, device=str(resolve_device(self.device)),
                    dtype=str(resolve_dtype(self.dtype)).replace("torch.", ""),
                    compile=resolve_compile(self.compile), kernel=resolve_kernel(self.kernel))

    def refuse(self, spec: RunSpec) -> None:
        """Refuse, by name, what the tensor backend does not run.

        Parameters
        ----------
        spec : RunSpec
            The run, checked field by field.

        Raises
        ------
        ValueError
            If the scheme has no tensor step, the plan's batches come from a Numba rule of its
            own, ``test_functions`` are given (a Numba function), or ``path_refine != 1``.
        """
        from integrators.torch.schemes import torch_step

        torch_step(spec.scheme)  # a scheme without a tensor step, by name
        plan_rule(spec.plan)  # a plan whose batches come from a Numba rule of its own, by name
        if spec.observers.test_functions is not None:
            raise ValueError("test_functions is a Numba function: the torch backend cannot run it "
                             "(use the Numba backend, or keep=... and compute the test functions on the samples)")
        if spec.path_refine != 1:
            raise ValueError(f"path_refine={spec.path_refine} is offered by the Numba backend only")

    def memory_bytes(self, spec: RunSpec) -> float:
        """About how many bytes of tensors ``spec`` holds on its device.

        Parameters
        ----------
        spec : RunSpec
            The run.

        Returns
        -------
        float
            State, force, path and observers (about 16 numbers per coordinate), the plan's
            per-chain arrays (for partition plans: uniforms, a permutation and its batches over
            the data) and the force's per-datum terms of a batch (the whole data under ``full``).
        """
        # state, force, path and observers about 16 numbers per coordinate; the plan's per-chain arrays
        # (partition plans: uniforms, a permutation and its batches over the data) and the force's
        # per-datum terms of a batch (the whole data under full)
        obs, dim, n_data = spec.observers, spec.target.dim, spec.target.n_data
        kind = plan_rule(spec.plan).kind
        plan_terms = 3 * n_data if kind == "partition" else 0
        batch_terms = (n_data if kind == "full" else spec.batch_size) * dim
        per_chain = 16 * dim + plan_terms + batch_terms + obs.keep * dim + (dim * dim if obs.full_moments else 0)
        return 8.0 * (spec.n_chains * per_chain + obs.n_bins)

    def memory_limit(self) -> float | None:
        """The memory of the device a run may fill.

        Returns
        -------
        float or None
            A CUDA device's free memory now, else the memory available on this machine now
            (:func:`integrators._memory.device_memory_bytes`; ``None`` where the platform does not
            say).
        """
        return device_memory_bytes(self.device)

    def run(self, specs: list[RunSpec]) -> list:
        """Run checked specs (:func:`integrators.torch._chains.run_specs`): those the fused kernel runs
        that differ only in their plans in one launch, the others one after another.

        Parameters
        ----------
        specs : list of RunSpec
            The runs.

        Returns
        -------
        list of SampleResult
            One result per spec, in order.
        """
        from integrators.torch._chains import run_specs

        return run_specs(specs)


BACKEND = instance_of((Numba, Torch), "a backend: Numba(threads) or Torch(device, dtype, compile)")
