# shellcheck shell=bash
# shellcheck disable=SC2034 # BENCH_RC is read by the sections that source this
# Shared helpers of the benchmark (bench/run.sh): clocks, medians, the result
# rows and the cleanup list. Sourced, never run.

BENCH_ROWS=()
BENCH_CLEANUPS=()
BENCH_ERRORS=0

# VAR <- now in microseconds (bash's own clock: no child process).
bench_now_us() {
  local -n _bench_out="$1"
  _bench_out="${EPOCHREALTIME//[!0-9]/}"
}

# VAR <- wall microseconds of COMMAND... (its output goes where the caller's
# goes; its exit status is kept in BENCH_RC).
bench_time_us() {
  local -n _bench_elapsed="$1"
  shift
  local start end
  BENCH_RC=0
  start="${EPOCHREALTIME//[!0-9]/}"
  "$@" || BENCH_RC=$?
  end="${EPOCHREALTIME//[!0-9]/}"
  _bench_elapsed=$((10#${end} - 10#${start}))
}

# Prints the median of integer VALUES (the lower middle one for an even count).
bench_median() {
  local -a sorted
  mapfile -t sorted < <(printf '%s\n' "$@" | sort -n)
  printf '%s\n' "${sorted[$(((${#sorted[@]} - 1) / 2))]}"
}

# Prints the smallest of integer VALUES.
bench_median_min() {
  printf '%s\n' "$@" | sort -n | head -n1
}

# Microseconds as "12.3 ms" or "2.05 s".
bench_fmt_us() {
  local us="$1"
  if ((us >= 1000000)); then
    printf '%d.%02d s' "$((us / 1000000))" "$((us % 1000000 / 10000))"
  else
    printf '%d.%d ms' "$((us / 1000))" "$((us % 1000 / 100))"
  fi
}

# A / B with two decimals ("-" when B is 0).
bench_ratio() {
  local a="$1" b="$2"
  ((b != 0)) || { printf -- '-'; return 0; }
  local hundredths=$(((a * 200 / b + 1) / 2))
  printf '%d.%02d' "$((hundredths / 100))" "$((hundredths % 100))"
}

# One result row: SECTION MEASURE HOSTGUARD REFERENCE RATIO TARGET MET.
bench_row() {
  local IFS='|'
  BENCH_ROWS+=("$*")
  printf '  %s\n' "$*" >&2
}

bench_log() {
  printf '== %s (%(%H:%M:%S)T)\n' "$*" -1 >&2
}

# A correctness check of the benchmark failed (wrong counts, lost or
# duplicated messages): the run still finishes its table, then exits 1.
bench_error() {
  printf 'bench: ERROR: %s\n' "$*" >&2
  BENCH_ERRORS=$((BENCH_ERRORS + 1))
}

# Spools the NUL-separated texts on stdin into HOSTGUARD_ROOT's spool, in
# order, as the host agent does (bench/lib/spool.py); with --events in the
# ban tool's queue.
bench_spool() {
  "${BENCH_REPO}/bench/lib/spool.py" enqueue "$@"
}

# Runs `hostguard-notify flush` (output appended to LOG) until the spool is
# empty or MAX runs went by; a run's exit 75 (work left for the next run) goes
# on, any other failure is a correctness error named after LABEL. Sets VAR
# to the number of runs.
bench_flush_spool() {
  local label="$1" log="$2" max="$3"
  local -n _bench_runs="$4"
  local rc
  _bench_runs=0
  while ((_bench_runs < max)); do
    _bench_runs=$((_bench_runs + 1))
    rc=0
    "${BENCH_REPO}/scripts/hostguard-notify" flush >>"${log}" 2>&1 || rc=$?
    ((rc == 0)) && return 0
    ((rc == 75)) || { bench_error "${label}hostguard-notify flush exited ${rc}"; return 0; }
  done
}

bench_on_exit() {
  local i
  for ((i = ${#BENCH_CLEANUPS[@]} - 1; i >= 0; i--)); do
    ${BENCH_CLEANUPS[i]} || true
  done
  BENCH_CLEANUPS=()
}

# Registers a cleanup command (a function name plus words, run in reverse order).
bench_cleanup_add() {
  BENCH_CLEANUPS+=("$*")
}

bench_table() {
  local row
  printf '| Benchmark | Measure | hostguard | reference | ratio | target | met? |\n'
  printf '|---|---|---|---|---|---|---|\n'
  for row in "${BENCH_ROWS[@]}"; do
    printf '| %s |\n' "${row//|/ | }"
  done
}
