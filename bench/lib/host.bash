# shellcheck shell=bash
# Benchmark 1: the host monitor's cost per run when nothing fires (what an
# operator feels of a 10-minute cron job: processes started and a bounded
# run), against the SPEC-style reference (bench/reference/host-monitor)
# measured in the same run. Sourced by run.sh.

# The most a quiet run may take (Debian's python3; issue 31).
readonly BENCH_HOST_QUIET_MAX_US=60000

# Child processes one run execs: successful execve calls of every process but
# the first (whose own execve calls are the script's start: env, then bash).
# Also prints the number of processes (forks) after a space.
bench_count_spawns() {
  local trace="$1"
  shift
  strace -f -qq -e trace=execve,clone,clone3,fork,vfork -o "${trace}" "$@" >/dev/null
  awk '
    NR == 1 { root = $1 }
    # A call that another process interrupts is split into "execve(...
    # <unfinished ...>" and "<... execve resumed>) = 0": count the result.
    ($2 ~ /^execve\(/ || $3 == "execve") && $1 != root && / = 0$/ { spawns++ }
    # Every process made, exec or not (a subshell makes no traced call of
    # its own, so counting the pids seen would miss it).
    ($2 ~ /^(clone3?|v?fork)\(/ || $3 ~ /^(clone3?|v?fork)$/) && / = [1-9][0-9]*$/ { forks++ }
    END { printf "%d %d\n", spawns, forks }
  ' "${trace}"
}

bench_host() {
  local work="$1" runs="$2"
  bench_log "host monitor: spawns and wall time per run, nothing firing (${runs} runs each)"
  local root="${work}/host-root"
  mkdir -p "${root}/etc/hostguard"
  # Thresholds of 100: nothing can fire, on any machine.
  printf '%s\n' CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 \
    >"${root}/etc/hostguard/hostguard.conf"
  local ours="${BENCH_REPO}/scripts/host-monitor" ref="${BENCH_REPO}/bench/reference/host-monitor"
  export REF_CPU_THRESHOLD=100 REF_MEMORY_THRESHOLD=100 REF_DISK_THRESHOLD=100

  # Steady state: cron runs it every 10 minutes, so a CPU sample exists
  # (the very first run takes a 1 s sample instead).
  local out
  out="$(HOSTGUARD_ROOT="${root}" "${ours}")"
  [[ "${out}" == *"alerts=none"* ]] || bench_error "host monitor fired or failed: ${out}"
  [[ -s "${root}/var/lib/hostguard/cpu.sample" ]] || bench_error "host monitor wrote no CPU sample"

  local ours_spawns ref_spawns ours_procs ref_procs
  read -r ours_spawns ours_procs < <(HOSTGUARD_ROOT="${root}" bench_count_spawns "${work}/host.strace" "${ours}")
  read -r ref_spawns ref_procs < <(bench_count_spawns "${work}/ref-host.strace" "${ref}")

  local -a ours_us=() ref_us=()
  local i us
  for ((i = 0; i < runs; i++)); do
    # The CPU counters must advance between two runs, or the monitor takes
    # a fresh 1 s sample (a real run is 10 minutes after the previous one).
    sleep 0.05
    HOSTGUARD_ROOT="${root}" bench_time_us us "${ours}" >/dev/null
    ((BENCH_RC == 0)) || bench_error "host monitor exited ${BENCH_RC}"
    ours_us+=("${us}")
    bench_time_us us "${ref}" >/dev/null
    ((BENCH_RC == 0)) || bench_error "reference host monitor exited ${BENCH_RC}"
    ref_us+=("${us}")
  done
  local ours_med ref_med
  ours_med="$(bench_median "${ours_us[@]}")"
  ref_med="$(bench_median "${ref_us[@]}")"

  local met="yes"
  ((ours_spawns == 0)) || met="no: ${ours_spawns} spawns (see ${work##*/}/host.strace)"
  bench_row "1 host monitor" "child processes exec'd per run (strace -f execve; forks in brackets)" \
    "${ours_spawns} (${ours_procs})" "${ref_spawns} (${ref_procs})" \
    "$(bench_ratio "${ours_spawns}" "${ref_spawns}")" "0 spawns" "${met}"
  met="yes"
  ((ours_med <= BENCH_HOST_QUIET_MAX_US)) || met="no: over $(bench_fmt_us "${BENCH_HOST_QUIET_MAX_US}")"
  bench_row "1 host monitor" "wall time per quiet run, median of ${runs} alternated (fastest: $(bench_fmt_us "$(bench_median_min "${ours_us[@]}")") vs $(bench_fmt_us "$(bench_median_min "${ref_us[@]}")"))" \
    "$(bench_fmt_us "${ours_med}")" "$(bench_fmt_us "${ref_med}")" \
    "$(bench_ratio "${ours_med}" "${ref_med}")x the SPEC-style script" "<= 60 ms" "${met}"
}
