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
# issue 11: Figure 1 at the full preset on 2 threads and on all 16 cores (one process: kernels compile once)
timeout 230 python3 benchmarks/bench_figure1.py --preset full --threads 2,16 \
  2>&1 | tee "$out/bench_figure1.txt"
# issue 13 (< 4 minutes): (a) module-mode step against SGD; (b) chains-mode rates, counter normals
# stream v1 against v2 and the previous sampler step against the fused one; (c) one Figure 1 point
# at full (first call compiles, then again; then 2^19 and 2^20 chains per repeat) and the whole
# figure at full on cuda.  -u: a run cut by its timeout keeps what it printed.
timeout 100 python3 -u benchmarks/bench_torch.py --device cuda --skip c 2>&1 | tee "$out/bench_torch.txt"
timeout 130 python3 -u benchmarks/bench_torch.py --device cuda --skip ab --figure-chains '2**19,2**20' \
  --whole-figure 2>&1 | tee "$out/bench_torch_figure1.txt"
# issue 15: the paper's Fashion-MNIST network through the pipeline, per-epoch times; then 4 SMS-UBU
# chains at once (multi-chain mode, RunConfig.chains) against one chain: the throughput gain
timeout 150 python3 -u benchmarks/bench_bnn_gpu.py --device cuda --chains 4 2>&1 | tee "$out/bench_bnn_gpu.txt"
# issue 38 (items 3, 4; < 2.5 minutes): module mode replayed from CUDA graphs against SGD with momentum eager
# and in a hand-captured CUDA graph; 8 chains at once (graph) against one chain and plain vmap over 8 copies
timeout 150 python3 -u benchmarks/bench_module_graph.py --device cuda 2>&1 | tee "$out/bench_module_graph.txt"
