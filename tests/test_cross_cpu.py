"""The pinned tests once more, as another CPU would run them: numpy, torch and Numba held to their
baseline instruction sets (what the issue saw: numpy's AVX-512 reductions and oneDNN's AVX-512
convolutions give other last bits than the AVX2 machine the references came from).

The rest of the suite runs them with the libraries' defaults; here a subprocess runs them with

* ``NPY_DISABLE_CPU_FEATURES``: every optimization numpy dispatches to at run time that this CPU
  has (read from numpy at run time: naming a baseline feature is an error, an unknown one a
  warning); numpy then runs its baseline (X86_V2 on x86-64) code.  Its BLAS too
  (``OPENBLAS_CORETYPE=Nehalem``, the same SSE4.2 level, on x86-64);
* ``ATEN_CPU_CAPABILITY=default`` (torch's kernels without AVX2/AVX-512) and
  ``ONEDNN_MAX_CPU_ISA=SSE41`` (oneDNN's lowest, on x86-64);
* ``NUMBA_CPU_NAME=generic`` (Numba compiles for a generic CPU of the architecture, no features);

checks that each library took its setting, and requires every pinned test to pass.  About 35-45 s
on 2 cores, most of it Numba compiling the kernels again for the generic CPU.
"""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[1]
PINNED = ["tests/test_reference_outputs.py",
          "tests/test_bnn_pipeline.py::test_chains_at_once_follow_the_single_chain_trajectories"]
X86 = platform.machine().lower() in ("x86_64", "amd64")

# In the subprocess: report what each library dispatches to, then run pytest on the arguments.
PROBE = r"""
import json, sys
try:
    from numpy._core import _multiarray_umath as umath
except ImportError:  # numpy 1.x
    from numpy.core import _multiarray_umath as umath
import numba, threadpoolctl, torch
conv = torch.nn.Conv2d(8, 8, 3)
with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON), torch.no_grad():
    conv(torch.randn(4, 8, 16, 16))  # oneDNN prints its ISA ("isa:...") on its first primitive
sys.stdout.flush()
print("PROBE " + json.dumps({
    "numpy_dispatch": [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)],
    "aten": torch.backends.cpu.get_cpu_capability(),
    "numba": [numba.config.CPU_NAME, numba.config.CPU_FEATURES],
    "openblas": [i.get("architecture") for i in threadpoolctl.threadpool_info() if i.get("internal_api") == "openblas"],
}), flush=True)
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def numpy_dispatched_features() -> list[str]:
    """The optimizations numpy chooses at run time on this CPU (beyond its compiled baseline)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath
    return [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]


def baseline_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    features = list(dict.fromkeys(env.get("NPY_DISABLE_CPU_FEATURES", "").split() + numpy_dispatched_features()))
    if features:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(features)
    env.update(ATEN_CPU_CAPABILITY="default", NUMBA_CPU_NAME="generic")
    env.pop("NUMBA_CPU_FEATURES", None)  # generic: no features
    if X86:
        env.update(ONEDNN_MAX_CPU_ISA="SSE41", OPENBLAS_CORETYPE="Nehalem")
    return env


def test_pinned_tests_pass_with_the_libraries_at_their_baseline():
    proc = subprocess.run([sys.executable, "-c", PROBE, "-q", "-p", "no:cacheprovider", *PINNED], cwd=ROOT,
                          env=baseline_env(), capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert " passed" in out and " failed" not in out, out[-3000:]
    probe = json.loads(next(line[6:] for line in proc.stdout.splitlines() if line.startswith("PROBE ")))
    assert probe["numpy_dispatch"] == [], probe  # numpy runs its baseline code only
    assert probe["aten"].lower() == "default", probe
    assert probe["numba"] == ["generic", ""], probe
    if X86:
        assert "isa:Intel SSE4.1" in out, [line for line in out.splitlines() if "isa:" in line]
        assert set(probe["openblas"]) <= {"Nehalem"}, probe
