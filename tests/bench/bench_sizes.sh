# Sourced by the benchmarks: bench_train --size's models (0.3m, 1m, 3m) as `sharelens topology` flags, so a
# benchmark that trains through the CLI builds the same shapes (tests/bench/bench_train.cpp benchTopology).
bench_size_flags() {
  case "$1" in
    0.3m) echo "--layers 4 --unique 4 --d-model 80 --heads 4 --kv-heads 2 --ffn 216" ;;
    1m) echo "--layers 6 --unique 6 --d-model 128 --heads 4 --kv-heads 4 --ffn 344" ;;
    3m) echo "--layers 7 --unique 7 --d-model 192 --heads 6 --kv-heads 3 --ffn 512" ;;
    *) echo "unknown size $1 (0.3m, 1m or 3m)" >&2; return 1 ;;
  esac
}
