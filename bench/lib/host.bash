# shellcheck shell=bash
# Benchmark 1: the host monitor's cost per run when nothing fires, against
# the SPEC-style reference (bench/reference/host-monitor) and against the
# bash monitor this Python one replaced (issue 22), taken from the commit
# BENCH_BASH_MONITOR_COMMIT of this repository's history and measured in the
# same run. Sourced by run.sh.

# The last commit whose host monitor was bash (scripts/host-monitor, lib/).
readonly BENCH_BASH_MONITOR_COMMIT=b3fb14b

# DIR <- the bash host monitor of BENCH_BASH_MONITOR_COMMIT (with its
# libraries); 1 when the history does not have it (a shallow clone).
bench_bash_monitor() {
  local dir="$1"
  mkdir -p "${dir}"
  git -C "${BENCH_REPO}" archive "${BENCH_BASH_MONITOR_COMMIT}" scripts/host-monitor scripts/lib 2>/dev/null \
    | tar -x -C "${dir}" 2>/dev/null && [[ -x "${dir}/scripts/host-monitor" ]]
}

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

  # The bash monitor of before issue 22, in a root of its own (its state
  # files differ), warmed up the same way.
  local bash_dir="${work}/host-bash" bash_root="${work}/host-bash-root" bash_monitor=""
  if bench_bash_monitor "${bash_dir}"; then
    bash_monitor="${bash_dir}/scripts/host-monitor"
    mkdir -p "${bash_root}/etc/hostguard"
    cp "${root}/etc/hostguard/hostguard.conf" "${bash_root}/etc/hostguard/"
    HOSTGUARD_ROOT="${bash_root}" "${bash_monitor}" >/dev/null || bench_error "bash host monitor failed"
  fi

  local ours_spawns ref_spawns ours_procs ref_procs
  read -r ours_spawns ours_procs < <(HOSTGUARD_ROOT="${root}" bench_count_spawns "${work}/host.strace" "${ours}")
  read -r ref_spawns ref_procs < <(bench_count_spawns "${work}/ref-host.strace" "${ref}")

  local -a ours_us=() ref_us=() bash_us=()
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
    if [[ -n "${bash_monitor}" ]]; then
      HOSTGUARD_ROOT="${bash_root}" bench_time_us us "${bash_monitor}" >/dev/null
      ((BENCH_RC == 0)) || bench_error "bash host monitor exited ${BENCH_RC}"
      bash_us+=("${us}")
    fi
  done
  local ours_med ref_med
  ours_med="$(bench_median "${ours_us[@]}")"
  ref_med="$(bench_median "${ref_us[@]}")"

  local met="yes"
  ((ours_spawns == 0)) || met="no: ${ours_spawns} spawns (see ${work##*/}/host.strace)"
  bench_row "1 host monitor" "child processes exec'd per run (strace -f execve; forks in brackets)" \
    "${ours_spawns} (${ours_procs})" "${ref_spawns} (${ref_procs})" \
    "$(bench_ratio "${ours_spawns}" "${ref_spawns}")" "0 spawns" "${met}"
  local speedup
  speedup="$(bench_ratio "${ref_med}" "${ours_med}")"
  met="yes"
  ((ref_med >= 15 * ours_med)) || met="no: only ${speedup}x faster"
  bench_row "1 host monitor" "wall time per run, median of ${runs} alternated (fastest: $(bench_fmt_us "$(bench_median_min "${ours_us[@]}")") vs $(bench_fmt_us "$(bench_median_min "${ref_us[@]}")"))" \
    "$(bench_fmt_us "${ours_med}")" "$(bench_fmt_us "${ref_med}")" \
    "${speedup}x faster" ">= 15x faster" "${met}"
  if [[ -z "${bash_monitor}" ]]; then
    bench_row "1 host monitor" "against the bash monitor of ${BENCH_BASH_MONITOR_COMMIT}" "-" \
      "not measured: commit ${BENCH_BASH_MONITOR_COMMIT} is not in this clone's history" "-" "-" "-"
    return 0
  fi
  local bash_med
  bash_med="$(bench_median "${bash_us[@]}")"
  speedup="$(bench_ratio "${bash_med}" "${ours_med}")"
  met="yes"
  ((bash_med >= ours_med)) || met="no: slower than the bash monitor"
  bench_row "1 host monitor" "wall time per run against the bash monitor it replaced (${BENCH_BASH_MONITOR_COMMIT}), median of ${runs} alternated" \
    "$(bench_fmt_us "${ours_med}")" "$(bench_fmt_us "${bash_med}")" \
    "${speedup}x faster" "faster than the bash" "${met}"
}
