"""A step written over static buffers, replayed: captured in a CUDA graph on CUDA, a plain call elsewhere.

Module mode and the ensembles (:class:`integrators.torch.ModuleSampler`, :mod:`integrators.torch._ensemble`)
write a graph step as a function of no arguments that reads only tensors which stay put (the state
``x, v``, the cached force, the step's normals and batch indices, a device step counter) and writes
its results into them.  Before each call the sampler refills the normals and the indices from the
same generators, in the same order, as its eager step draws them, so both give the same trajectory.
:class:`StepReplay` runs such a function under a key (everything baked into the captured kernels:
the loss function, the step's coefficients, the batch's shape): on CUDA a key's first call runs
eagerly on a side stream (the warm-up CUDA graphs need: cuDNN and cuBLAS pick their algorithms,
autograd its buffers), its second is captured into a ``torch.cuda.CUDAGraph`` (a memory pool of its
own, so graphs replayed in any order cannot overwrite each other's outputs) and replayed, and later
calls replay it: one launch for the whole step.  On any other device every call is the plain call,
which is what the CPU tests check against the eager step.
"""

from __future__ import annotations

import warnings

import torch

from integrators._validation import one_of

GRAPH = one_of((True, False, "auto"))  # SamplerConfig.graph's constraint
MAX_GRAPHS = 8  # distinct keys captured per sampler; beyond, steps run eagerly (a warning says why)


def static_step(st, sampler, coef, dW, J, force, last_loss) -> None:
    """The body a graph step replays, shared by module mode and the ensembles: the scheme's step of
    ``sampler`` (its ``module``, ``x``, ``v``, ``reflect``) into the static buffers ``st`` (the cached
    force, the loss ``last_loss()`` read after the force, the device step counter), and the divergence
    record."""
    from integrators.torch._posterior_terms import record_divergence

    with torch.no_grad():
        g = sampler.module.step(sampler.x, sampler.v, st["g"], coef, dW, J, force, sampler.reflect)
        st["g"].copy_(g)
        if "loss" in st:
            st["loss"].copy_(last_loss())
        else:  # (at the first call, eager: a CUDA graph's warm-up or a plain call)
            st["loss"] = last_loss().clone()
        st["k"].add_(1)
        record_divergence(sampler.diverged_at, st["k"], sampler.x, st["g"], st["loss"])


def graph_refusal(graph, *, schedule, control_variate) -> str | None:
    """Why ``graph=True`` cannot be kept with these options (None: it can): a schedule changes the
    step's coefficients every step, and the control variate's reference gradient is recomputed
    outside the step."""
    if graph is not True:
        return None
    if schedule is not None:
        return "graph=True needs a constant step size (a schedule gives a new one every step)"
    if control_variate:
        return "graph=True does not capture the control variate (its reference gradient is recomputed)"
    return None


def graph_enabled(graph, device: torch.device, *, schedule=None, control_variate: bool = False) -> bool:
    """Whether a sampler replays its step: ``graph=True``, or ``"auto"`` on a CUDA device without a
    schedule or a control variate."""
    if graph == "auto":
        return torch.device(device).type == "cuda" and schedule is None and not control_variate
    return bool(graph)


class StepReplay:
    """Run step functions by key, captured into CUDA graphs on CUDA (see the module docstring).

    Parameters
    ----------
    device : torch.device
        The state's device.
    strict : bool, default True
        Whether a capture that fails raises (``graph=True``); otherwise (``"auto"``) a warning says
        why and the steps run eagerly from then on.
    """

    def __init__(self, device, *, strict: bool = True):
        self.cuda = torch.device(device).type == "cuda"
        self.strict = strict
        self.graphs: dict = {}
        self.warmed: set = set()
        self.warned = False
        self.captures = 0  # graphs captured (the tests and benchmarks read it)

    def __call__(self, key, fn) -> None:
        """Run ``fn()`` for ``key``: a plain call off CUDA; on CUDA warm-up, capture, then replays."""
        if not self.cuda:
            fn()
            return
        graph = self.graphs.get(key)
        if graph is not None:
            graph.replay()
            return
        if key not in self.warmed or len(self.graphs) >= MAX_GRAPHS:
            if len(self.graphs) >= MAX_GRAPHS and not self.warned:
                self.warned = True
                warnings.warn(f"{MAX_GRAPHS} different steps captured (a new loss function, step size or batch "
                              f"shape each step?): further ones run eagerly", RuntimeWarning, stacklevel=3)
            if len(self.warmed) < 4 * MAX_GRAPHS:
                self.warmed.add(key)
            here, side = torch.cuda.current_stream(), torch.cuda.Stream()
            side.wait_stream(here)
            with torch.cuda.stream(side):
                fn()
            here.wait_stream(side)
            return
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                fn()
        except RuntimeError as exc:
            if self.strict:
                raise
            warnings.warn(f"the step could not be captured in a CUDA graph ({exc}); it runs eagerly",
                          RuntimeWarning, stacklevel=3)
            self.cuda = False
            fn()
            return
        self.graphs[key] = graph
        self.captures += 1
        graph.replay()
