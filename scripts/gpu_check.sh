#!/usr/bin/env bash
# One call that checks and measures the CUDA path on a GPU machine, then prints one table:
#   1. installs the wheels the GPU image lacks from .whl/ (if present) into /tmp/site;
#   2. runs the CUDA tests on the GPU (the kernels against the reference engine, the batched
#      env's differential tests on CUDA, the compiled bots against the CPU's, the PTX
#      compile), every kernel variant against the reference engine;
#   3. times the batched env on the GPU at 4,096, 65,536 and 262,144 games, with and without
#      observations, for each kernel variant, and pgx's leduc_holdem at the same sizes in a
#      separate process;
#   4. a self-play run of configs/gpu.yaml (2-player tables, no evaluation) for at most
#      $GPU_CHECK_TRAIN_SECONDS (180) seconds: turns/s over its updates and end to end, the
#      share of time in the env, the forward pass, bots, bookkeeping and the PPO update, and
#      its network in $OUT/network.pt (measure it against v1 on a CPU afterwards:
#      python -m training.evaluate network.pt checkpoints/v1/ppo_2p.pt --rounds 8000 --duplicate --seed 3);
#   5. prints the table, with the GPU's name.
# Every step has its own time limit, so one hang costs only its own step; the whole takes
# at most 8 minutes. Results and logs go to $OUT (default /tmp/gpu_check), the
# self-play run to $OUT/runs/.
#
#   bash scripts/gpu_check.sh                   # on the GPU machine
#   GPU_CHECK_SMOKE=1 bash scripts/gpu_check.sh # small sizes and short steps, any machine (CPU if no GPU)
#   GPU_CHECK_SKIP="pgx training" bash scripts/gpu_check.sh  # leave out steps (tests, env, pgx, training)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-/tmp/gpu_check}
mkdir -p "$out"
: > "$out/results.jsonl"
: > "$out/steps.txt"
smoke=${GPU_CHECK_SMOKE:-0}
# The interpreter that has torch (on the GPU image, `python` is its virtual environment's).
py=$(command -v python || command -v python3)

# 1. Wheels the GPU image lacks (gymnasium, pettingzoo, openskill, pgx, ...), fetched beforehand
#    into .whl/; installed without dependencies (the image has the rest) and without touching
#    the image's own packages.
if compgen -G ".whl/*.whl" > /dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
        > "$out/install.log" 2>&1 || echo "wheel install failed: see $out/install.log"
    export PYTHONPATH="/tmp/site:$root"
else
    export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
fi
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX and torch share the GPU
export PYTHONUNBUFFERED=1

if "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> /dev/null; then
    device=cuda
else
    device=cpu
fi
# Kernel variants timed side by side (threads a block, records, observation writes, register
# cap; see loveletter_env.core.gpu.KernelVariant): the first is the env's default, also timed
# through numba's own launch and as a CUDA graph; the capped ones trade registers for
# resident threads.
variants="64,shared,zeroed 128,shared,zeroed 64,global,zeroed 64,global,zeroed,r64 64,global,zeroed,r40"
if [ "$smoke" = 1 ]; then
    sizes="64 256"; steps=3; repeats=1; pgx_repeats=1; tests_k="simulator or ptx or cuda"
    train_steps=4096; train_games=64; train_limit=120
else
    # pgx compiles its step afresh for every measurement: one repeat of more steps.
    sizes="4096 65536 262144"; steps=20; repeats=3; pgx_repeats=1; tests_k="(cuda or ptx or gpu) and not simulator"
    # Self-play stops at its last turn or at the step's time limit (a stop signal: it saves
    # and exits at the end of the update under way), whichever comes first.
    train_steps=${GPU_CHECK_TRAIN_STEPS:-400000000}; train_games=32768
    train_limit=${GPU_CHECK_TRAIN_SECONDS:-180}
fi
[ "$device" = cpu ] && echo "no CUDA device: the env and self-play steps run on the CPU (a smoke test of this script)"

# run NAME SECONDS COMMAND...: one step under its own time limit; output in $out/NAME.log.
run() {
    local name=$1 limit=$2 start=$SECONDS rc
    shift 2
    if [[ " ${GPU_CHECK_SKIP:-} " == *" $name "* ]]; then
        printf '  %-10s skipped (GPU_CHECK_SKIP)\n' "$name" | tee -a "$out/steps.txt"
        return
    fi
    echo "== $name (limit ${limit}s)"
    timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
    rc=$?
    [ $rc = 124 ] && echo "   TIMED OUT after ${limit}s" >> "$out/$name.log"
    printf '  %-10s exit %3s  %4ss\n' "$name" "$rc" "$((SECONDS - start))" | tee -a "$out/steps.txt"
    tail -n 4 "$out/$name.log" | sed 's/^/   | /'
}

"$py" - << 'EOF' > "$out/versions.log" 2>&1
import sys, importlib
print("python", sys.version.split()[0])
for name in ("torch", "numba", "numba_cuda", "jax", "pgx", "gymnasium", "pettingzoo"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"))
    except Exception as error:
        print(name, "missing:", type(error).__name__, error)
EOF
cat "$out/versions.log"

# 2. Tests: on a GPU the kernels' differential check on the device (every kernel variant),
#    the env's differential tests on CUDA, the compiled bots against the CPU's and the PTX
#    compile (the simulator's checks are CI's: they are slow).
#    With pytest-xdist (a wheel in .whl/), in twelve processes: each compiles the kernels, and
#    the reference engine plays its side of every game in Python.
workers=()
[ "$device" = cuda ] && "$py" -c "import xdist" 2> /dev/null && workers=(-n 12)
run tests 160 "$py" -m pytest -q -p no:cacheprovider "${workers[@]}" tests/core/test_cuda.py \
    tests/batched/test_batched.py tests/agents/test_cuda_bots.py -k "$tests_k"

# 3. The env on the device (every variant), then pgx in a process of its own (JAX and torch apart).
run env 90 "$py" scripts/gpu_check.py env --device "$device" --sizes $sizes --steps $steps \
    --repeats $repeats --variants $variants --out "$out"
run pgx 30 "$py" scripts/gpu_check.py pgx --sizes $sizes --steps $((steps * 2)) --repeats $pgx_repeats --out "$out"

# 4. Self-play on the device: its turns a second and where the time goes, and its network
#    ($out/network.pt), to be measured against v1 on a CPU afterwards.
rm -rf "$out/runs/gpu_check"
train_start=$SECONDS
run training "$train_limit" "$py" -m training.selfplay --config configs/gpu.yaml --device "$device" --no-progress \
    --set out_dir="$out/runs" --set run_name=gpu_check --set env.num_players=[2] \
    --set env.num_games=$train_games --set total_steps=$train_steps --set eval.every=0 --set save_every=100000
if [ ! -s "$out/runs/gpu_check/metrics.csv" ] && [ $((SECONDS - train_start)) -lt 90 ]; then
    # It failed before its first update: once more through numba's own kernel launch, to
    # tell a launch problem from anything else (training.log keeps the first try's tail).
    cp "$out/training.log" "$out/training_direct.log"
    rm -rf "$out/runs/gpu_check"
    run training "$((train_limit - (SECONDS - train_start)))" "$py" -c 'import runpy, sys
from loveletter_env.batched.cuda_tuning import cuda_tuning
sys.argv[0] = "training.selfplay"
with cuda_tuning(launcher="numba"):
    runpy.run_module("training.selfplay", run_name="__main__", alter_sys=True)' \
        --config configs/gpu.yaml --device "$device" --no-progress \
        --set out_dir="$out/runs" --set run_name=gpu_check --set env.num_players=[2] \
        --set env.num_games=$train_games --set total_steps=$train_steps --set eval.every=0 --set save_every=100000
fi
train_wall=$((SECONDS - train_start))
[ -f "$out/runs/gpu_check/metrics.csv" ] && \
    "$py" scripts/gpu_check.py training --run-dir "$out/runs/gpu_check" --out "$out" --wall "$train_wall" \
        --export "$out/network.pt" >> "$out/training.log" 2>&1

# 5. The table.
"$py" scripts/gpu_check.py table --out "$out"
