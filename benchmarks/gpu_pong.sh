#!/usr/bin/env bash
# Pong on a lent GPU machine, in one call of the `device` tool (at most 10 minutes, a bare
# machine each time): unpack the dependencies, run one STEP, leave its files in $OUT.
#
# How to run
# ----------
# Here, once: bash ../shared/tools/device-site.sh   (packs Ray & co. into .dev/site.tar.xz)
#             optional, for --py-spy: the py-spy wheel for CPython 3.12 in .whl/
# Then, through the device tool, carrying .dev (and .whl):
#   bash benchmarks/gpu_pong.sh profile [RUNNERS]      # PROFILE.md: where the time goes
#   bash benchmarks/gpu_pong.sh throughput [COUNTS]    # THROUGHPUT.md: scaling table
#   bash benchmarks/gpu_pong.sh learn ALGO [SECONDS]   # one run of ALGO's tuned defaults
# Extra flags after these go to the python command (e.g. --set key=value).
# The reports name the machine; commit them under results/pong/ (the learning run: unpack
# run.tar.gz under runs/ and regenerate results/pong/REPORT.md with `python -m analysis report`).
# Not yet run on a device machine: none was lent when it was written (session 4, 2026-11-23).
set -euo pipefail
step=${1:?usage: gpu_pong.sh profile|throughput|learn ...}
shift
: "${OUT:?OUT must name the folder whose files come back}"
export PYTHONUNBUFFERED=1 RAY_DEDUP_LOGS=1
site=/tmp/site
mkdir -p "$site" && tar -xJf .dev/site.tar.xz -C "$site"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl
  export PATH="$site/bin:$PATH"
fi
export PYTHONPATH="$site:$PWD"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/machine.txt"
python3 -c "import torch, ray; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'ray', ray.__version__, 'cpus', __import__('os').cpu_count())" | tee -a "$OUT/machine.txt"

case "$step" in
  profile)
    runners=${1:-14}; shift || true
    python3 -m sweeps.profiling --env pong --num-env-runners "$runners" --seconds 15 \
      --max-warmup-s 90 --markdown "$OUT/PROFILE.md" "$@" 2>&1 | tee "$OUT/profile.log"
    ;;
  throughput)
    counts=${1:-1,2,4,8,14}; shift || true
    python3 -m sweeps.throughput --env pong --num-env-runners "$counts" --seconds 15 \
      --max-warmup-s 90 --json "$OUT/throughput.json" --markdown "$OUT/THROUGHPUT.md" "$@" \
      2>&1 | tee "$OUT/throughput.log"
    ;;
  learn)
    algo=${1:?learn ALGO [SECONDS]}; seconds=${2:-450}; shift 2 || shift $#
    python3 "sweeps/${algo}_pong.py" --benchmark-seeds 1 --num-env-runners 14 \
      --stop-reward 18 --stop-train-time-s "$seconds" --time-budget-s $((seconds + 60)) \
      --storage-path /tmp/runs --name "${algo}_pong_gpu" "$@" 2>&1 | tee "$OUT/learn.log" || true
    tar -czf "$OUT/run.tar.gz" -C /tmp/runs .
    ;;
  *) echo "unknown step $step (profile, throughput, learn)" >&2; exit 2 ;;
esac
