#!/usr/bin/env bash
# Every GPU / many-core measurement of the project in one prepared run, for a lent machine with one
# GPU and 16 cores (python3 with torch CUDA, numba, numpy, scipy, matplotlib; no package registry).
#   PYTHONPATH=. bash benchmarks/device_checks.sh      (outputs under $OUT, or /tmp/device_checks)
# Each benchmark has its own time limit so one that stalls cannot take the others' time.
set -u
export PYTHONPATH=.
out=${OUT:-/tmp/device_checks}
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; echo "cores: $(nproc)";
  python3 -c "import sys, torch, numba; print(sys.version.split()[0], 'torch', torch.__version__, 'numba', numba.__version__)"
} 2>&1 | tee "$out/machine.txt"
# issue 38 (< 8 minutes in all, each part with its own limit; -u: a run cut by its timeout keeps what it printed).
# (1) The whole Figure 1 at the full preset on cuda (the fused Triton kernel) from a cold process, then warm, then
#     the Numba backend on all cores in the same process: times, ratio, the points' W1 agreement (z-scores)
timeout 150 python3 -u benchmarks/bench_torch.py --device cuda --skip ab --whole-figure-only --against-numba \
  2>&1 | tee "$out/bench_torch_figure1.txt"
# (2) the fused Triton chain kernel against plain torch.compile of the same step with torch.randn, and its
#     in-kernel normals against torch.randn (chain-steps/s, normals/s, ratios)
timeout 90 python3 -u benchmarks/bench_fused.py --device cuda 2>&1 | tee "$out/bench_fused.txt"
# (3) module mode replayed from CUDA graphs against SGD with momentum eager and in a hand-captured CUDA graph;
#     8 chains at once (graph) against one chain and plain vmap over 8 copies
timeout 150 python3 -u benchmarks/bench_module_graph.py --device cuda 2>&1 | tee "$out/bench_module_graph.txt"
# (4) the BNN pipeline's per-epoch times on the Fashion-MNIST network, 4 chains at once against one
timeout 80 python3 -u benchmarks/bench_bnn_gpu.py --device cuda --chains 4 2>&1 | tee "$out/bench_bnn_gpu.txt"
