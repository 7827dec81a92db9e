#!/usr/bin/env bash
# ShareLens: one entry point for set-up, build, demo and tests on Debian 12.
#
#   ./dev.sh demo    install what is missing, build, open the GUI on the demo workspace
#   ./dev.sh test    install what is missing, build, run every test (what .ci/run runs)
#   ./dev.sh setup   only install (apt packages, npm corpora and tokenizer references)
#   ./dev.sh build   only configure + build build/ (Release)
#   ./dev.sh bench   build and run the benchmarks beside their PyTorch/numpy peers
#   ./dev.sh fuzz S  build the sanitizer build and run every fuzz target for S seconds in all
#   ./dev.sh format  format every C++ source with the committed .clang-format (test checks it)
#
# Runs as root, or as a user with sudo (used only for apt-get). Re-running is quick: installs are skipped
# when present, and the build is incremental.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$ROOT/build"
JOBS="$(nproc)"

APT_PACKAGES=(
  g++ cmake make pkg-config git time
  libtorch-dev libgloo-dev libsentencepiece-dev libicu-dev
  libimgui-dev libglfw3-dev libgl-dev libcairo2-dev fonts-dejavu-core
  libeigen3-dev liblapacke-dev libopenblas-dev libdnnl-dev nlohmann-json3-dev
  libgtest-dev libbenchmark-dev
  clang libclang-rt-14-dev clang-format-14
  xvfb xauth libgl1-mesa-dri mesa-utils xdotool
  python3 python3-torch python3-numpy
)

# Each line says when it came, in minutes and seconds since dev.sh started (where CI's time goes).
log() { printf '\033[1m[dev.sh %d:%02d]\033[0m %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

setup_apt() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
  if [ ${#missing[@]} -eq 0 ]; then
    log "apt packages: all present"
    return
  fi
  log "apt packages: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# npm_install DIR: `npm ci` into DIR/node_modules unless its lock file is unchanged since the last install.
npm_install() {
  local dir="$1" stamp="$1/node_modules/.sharelens-lock.sha"
  local want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "npm: $(basename "$dir") up to date"
    return
  fi
  log "npm: installing $(basename "$dir") (npm ci)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
}

setup() {
  setup_apt
  npm_install "$ROOT/third_party/corpora"
}

setup_test_extras() {
  npm_install "$ROOT/third_party/tokenizers"
}

build() {
  # Configured every time (a no-op when nothing changed) so that an older build directory gets the tests'
  # fault-injection switches too.
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSHARELENS_FAULT_INJECTION=ON >/dev/null
  log "build (Release, $JOBS jobs)"
  cmake --build "$BUILD" -j"$JOBS"
}

# The sanitizer build: core + its tests under ASan/UBSan (clang), and the libFuzzer target.
build_sanitized() {
  if [ ! -f "$ROOT/build-asan/CMakeCache.txt" ]; then
    CC=clang CXX=clang++ cmake -S "$ROOT" -B "$ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSHARELENS_CORE_ONLY=ON -DSHARELENS_SANITIZE=ON -DSHARELENS_FUZZ=ON -DSHARELENS_BUILD_BENCHMARKS=OFF
  fi
  log "build (core under ASan/UBSan, and the fuzzers)"
  cmake --build "$ROOT/build-asan" -j"$JOBS"
}

# Every C++ source git knows or would add (new files not yet added included: formatting before `git add`
# must not leave them out), in the committed .clang-format's style (clang-format 14, Debian 12's).
cxx_sources() {
  git -C "$ROOT" ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.cu' | sed "s|^|$ROOT/|"
}
format_tree() { cxx_sources | xargs clang-format-14 -i; }
check_format() {
  log "clang-format: every C++ source in the committed style"
  if ! cxx_sources | xargs clang-format-14 --dry-run -Werror 2>/dev/null; then
    cxx_sources | xargs clang-format-14 --dry-run 2>&1 | grep -o '^[^:]*:[0-9]*' | sort -u | head -20 >&2
    log "not formatted (above: file:line); ./dev.sh format fixes it"
    return 1
  fi
}

run_tests() {
  check_format
  log "ctest (Release build)"
  (cd "$BUILD" && ctest --output-on-failure -j"$JOBS")
  log "ctest under AddressSanitizer + UndefinedBehaviorSanitizer (core, malformed corpus)"
  build_sanitized
  (cd "$ROOT/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$JOBS")
  run_fuzzers 60
}

# run_fuzzers SECONDS: every libFuzzer target (tests/fuzz/) for an equal share of SECONDS, from its seeds
# (make_fixtures --seeds) and the corpus kept in build-asan/fuzz-corpus/<target> between runs. A crash, a leak
# or a timeout fails the run (libFuzzer's exit status), and its input is kept in build-asan/fuzz-artifacts/.
FUZZ_TARGETS=(safetensors model_view shard_index topology metrics llama2c torch_zip gguf)
run_fuzzers() {
  local share=$(( $1 / ${#FUZZ_TARGETS[@]} ))
  local seeds="$ROOT/build-asan/fuzz-seeds" artifacts="$ROOT/build-asan/fuzz-artifacts"
  rm -rf "$seeds" && mkdir -p "$artifacts"
  "$ROOT/build-asan/tests/make_fixtures" --seeds "$seeds"
  for target in "${FUZZ_TARGETS[@]}"; do
    log "libFuzzer: $target, ${share} s"
    mkdir -p "$ROOT/build-asan/fuzz-corpus/$target"
    local status=0 output="$artifacts/$target.log"
    "$ROOT/build-asan/tests/fuzz_$target" -max_total_time="$share" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/$target-" "$ROOT/build-asan/fuzz-corpus/$target" "$seeds/$target" >"$output" 2>&1 || status=$?
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+[[:space:]]+DONE)" "$output" || true
    if [ "$status" -ne 0 ]; then
      tail -n 40 "$output"
      log "fuzz_$target failed (status $status); the input is in $artifacts"
      return 1
    fi
  done
}

demo() {
  if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
    exec "$BUILD/sharelens" --demo
  fi
  log "no display: running the demo under Xvfb and saving a screenshot to $ROOT/out/demo.png"
  mkdir -p "$ROOT/out"
  xvfb-run -a -s "-screen 0 1920x1080x24" "$BUILD/sharelens" --demo --screenshot "$ROOT/out/demo.png" --frames 600
  log "screenshot: $ROOT/out/demo.png"
}

case "${1:-}" in
  setup) setup; setup_test_extras ;;
  build) build ;;
  demo) setup; build; demo ;;
  test) setup; setup_test_extras; build; run_tests ;;
  bench) setup; build; "$ROOT/tests/bench/run_benchmarks.sh" "$BUILD" ;;
  fuzz) setup; build_sanitized; run_fuzzers "${2:-600}" ;;
  format) format_tree ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
