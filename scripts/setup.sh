#!/usr/bin/env bash
# Gnomon set-up: installs what is missing (Debian 12), builds, and runs a job.
#
#   scripts/setup.sh demo    build, run the bundled demo, capture it to a trace file,
#                            print its report (the main job)
#   scripts/setup.sh test    check the formatting; build with warnings as errors and run
#                            every test; run each fuzz target for a minute; run the
#                            client's concurrency tests under thread sanitizer; then build
#                            with address and undefined-behaviour sanitizers and run every
#                            test again
#   scripts/setup.sh build   install what is missing and build, nothing else
#
# Idempotent: packages already installed are not touched, and builds are incremental.
# Environment: BUILD_DIR (default build), JOBS (default: number of CPUs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

job="${1:-demo}"
case "$job" in
  demo|test|build) ;;
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup.sh: unknown job '$job' (demo, test or build)" >&2; exit 1 ;;
esac

build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"

packages=(g++ gcc make cmake pkg-config python3 libasio-dev libzstd-dev doctest-dev libdw-dev libcapstone-dev
          libprotobuf-dev protobuf-compiler zlib1g-dev
          libvulkan-dev mesa-vulkan-drivers
          libglfw3-dev libgl-dev libopengl-dev libgl1-mesa-dri libglx-mesa0 xvfb
          libimgui-dev libstb-dev fonts-dejavu-core
          clang libclang-rt-14-dev clang-format-14)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "setup.sh: installing ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

configure_and_build() {  # dir, extra cmake args...
  local dir="$1"
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

run_demo() {
  local out_dir="$build_dir/demo"
  mkdir -p "$out_dir"
  local trace="$out_dir/demo.gnomon"
  echo "setup.sh: running the demo and capturing it to $trace"
  # Any free port: the demo announces itself, and the capture finds it by its pid. With
  # call stacks, 1 kHz samples and context switches (where the kernel allows them).
  GNOMON_PORT=0 GNOMON_CALLSTACK_DEPTH=8 GNOMON_SAMPLING_HZ=1000 GNOMON_CONTEXT_SWITCHES=1 \
    "$build_dir/client/examples/gnomon-demo" --seconds 3 &
  local demo_pid=$!
  "$build_dir/server/gnomon-capture" --pid "$demo_pid" -o "$trace" -f
  wait "$demo_pid"
  "$build_dir/server/gnomon-report" --chrome "$out_dir/demo.json" "$trace"
  echo
  echo "setup.sh: trace in $trace; Chrome/Perfetto JSON in $out_dir/demo.json"
  echo "setup.sh: browse it with $build_dir/viewer/gnomon-viewer $trace"
}

# The formatter is pinned (clang-format 14, Debian 12's): every tracked C and C++ file
# must be formatted as .clang-format says; a difference fails the job, with the files
# named and the command that fixes them.
check_format() {
  local files unformatted output status=0
  files=$(git ls-files '*.c' '*.cpp' '*.h' '*.hpp' 2>/dev/null || find client server protocol viewer tests -name '*.[ch]' -o -name '*.[ch]pp')
  # One run over every file (one a file takes a minute): it names each line that differs.
  # shellcheck disable=SC2086
  output=$(clang-format-14 --dry-run --Werror $files 2>&1) || status=$?
  unformatted=$(echo "$output" |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u | tr '\n' ' ')
  if [ "$status" -ne 0 ] && [ -z "$unformatted" ]; then  # it failed, but not on a difference
    echo "$output" | tail -20 >&2
    echo "setup.sh: clang-format-14 failed (exit $status)" >&2
    exit 1
  fi
  if [ -n "$unformatted" ]; then
    echo "setup.sh: not formatted as .clang-format says: $unformatted" >&2
    echo "setup.sh: run: clang-format-14 -i $unformatted" >&2
    exit 1
  fi
  echo "setup.sh: all $(echo "$files" | wc -w) C and C++ files are formatted"
}

# Each libFuzzer target for a minute from its seed corpus (tests/fuzz/corpus), with
# address and undefined-behaviour sanitizers; a crash fails the job. Inputs are at most
# 64 KiB, and no single allocation may reach 64 times that (twice for trace files and
# merges: a block's buffer and zstd's window); the stream and file targets also hold
# each input's whole heap to 64 bytes per byte it carries (see the targets).
run_fuzz_smoke() {
  local dir="$build_dir-fuzz"
  echo "setup.sh: fuzzing each target for ${FUZZ_SECONDS:-60} s, $jobs at a time"
  CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNOMON_FUZZ=ON -DGNOMON_WERROR=ON >/dev/null
  cmake --build "$dir" -j "$jobs" --target handshake_fuzzer stream_fuzzer trace_file_fuzzer merge_fuzzer
  # A target is one thread: as many run side by side as there are cores.
  local targets=(handshake stream trace_file merge) i pid failed=0
  for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    local pids=()
    for target in "${targets[@]:i:jobs}"; do
      fuzz_one "$dir" "$target" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ "$failed" -eq 0 ] || exit 1
  done
}

# One libFuzzer target for FUZZ_SECONDS; says how many runs it made, or shows the crash
# and keeps its input.
fuzz_one() {
  local dir=$1 target=$2 work malloc_limit_mb=4
  case "$target" in trace_file|merge) malloc_limit_mb=8 ;; esac
  work=$(mktemp -d)
  if ! "$dir/tests/fuzz/${target}_fuzzer" -max_total_time="${FUZZ_SECONDS:-60}" -timeout=10 -max_len=65536 \
      -malloc_limit_mb="$malloc_limit_mb" -rss_limit_mb=2048 \
      -artifact_prefix="$work/" "$work" "tests/fuzz/corpus/$target" >"$work/log" 2>&1; then
    tail -40 "$work/log"
    echo "setup.sh: ${target}_fuzzer found a crash; the input is in $work" >&2
    return 1
  fi
  echo "setup.sh: ${target}_fuzzer: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/log")"
  rm -rf "$work"
}

# Says how long the stage that just ended took (docs/reliability.md keeps CI's times).
stage_started=$SECONDS
stage_done() {
  echo "setup.sh: $1 took $((SECONDS - stage_started)) s"
  stage_started=$SECONDS
}

install_missing
stage_done "installing what was missing"
case "$job" in
  build)
    configure_and_build "$build_dir"
    ;;
  demo)
    configure_and_build "$build_dir"
    run_demo
    ;;
  test)
    check_format
    stage_done "the format check"
    configure_and_build "$build_dir" -DGNOMON_WERROR=ON
    stage_done "the build"
    (cd "$build_dir" && ctest --output-on-failure -j "$jobs")
    stage_done "the tests"
    run_fuzz_smoke
    stage_done "fuzzing (build and runs)"
    echo "setup.sh: the client's concurrent paths under thread sanitizer"
    cmake -S . -B "$build_dir-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNOMON_WERROR=ON -DGNOMON_SANITIZE=thread >/dev/null
    cmake --build "$build_dir-tsan" -j "$jobs" --target client_tests
    (cd "$build_dir-tsan" && ctest --output-on-failure -j "$jobs" -R '^client_tests:')
    stage_done "thread sanitizer (build and tests)"
    echo "setup.sh: again under address and undefined-behaviour sanitizers"
    configure_and_build "$build_dir-sanitize" -DGNOMON_WERROR=ON -DGNOMON_SANITIZE=address,undefined
    stage_done "the sanitizer build"
    (cd "$build_dir-sanitize" && ctest --output-on-failure -j "$jobs")
    stage_done "the tests under sanitizers"
    ;;
esac
