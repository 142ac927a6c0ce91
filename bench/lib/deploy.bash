# shellcheck shell=bash
# Benchmark 5: deploy scaling with the real Pulumi engine and the disposable
# test hosts (test/e2e/lib/hosts.sh). For each fleet size N: N fresh hosts
# come up in parallel before any timing, one stack of the repository's own
# program (a temp copy, file:// backend, test/e2e/lib/stack.sh) lists them,
# then a first `pulumi up` and a second, no-op `up` are timed. SSH sessions
# are the `Accepted publickey` lines added to each host's journal
# (host_sshd_log: the harness's sshd logs there, as on Debian 12). Ratios: first up of N hosts against the
# first up of 1 host, no-op up against the first up of the same fleet.
# When the engine cannot deploy @pulumi/command here the rows say why and
# the benchmark goes on. Sourced by run.sh after ban.bash (receiver helpers).
#
# Reads: tools/pulumi-env.sh and the engine cache (through stack.sh);
# BENCH_DEPLOY_PARALLEL (optional): passed as `up --parallel`, else the
# CLI's default is used (the engine row says which).

# shellcheck source=../../test/e2e/lib/hosts.sh
source "${BENCH_REPO}/test/e2e/lib/hosts.sh"
# shellcheck source=../../test/e2e/lib/stack.sh
source "${BENCH_REPO}/test/e2e/lib/stack.sh"

readonly BENCH_DEPLOY_TARGET="8 hosts <= 2x 1 host"
readonly BENCH_NOOP_TARGET="0 remote commands (SSH sessions)"
readonly BENCH_START_WAIT_S=30

bench_deploy_teardown() {
  receiver_stop || true
  hosts_down_all
}

# Brings up hosts PREFIX1..PREFIXN (indexes FIRST..FIRST+N-1) in parallel,
# each with the receiver's CA where the stack's notifyCaFile points.
# Each fleet gets addresses never used before in the run: a host that took
# over the address of one torn down was unreachable for ~50 s (the root
# namespace's neighbour entry still had the old host's MAC: SSH dials timed
# out and were retried by the provider).
bench_deploy_hosts_up() {
  local prefix="$1" count="$2" first="$3" i rc=0
  local -a pids=()
  for ((i = 1; i <= count; i++)); do
    host_up "${prefix}${i}" "$((first + i - 1))" >/dev/null &
    pids+=("$!")
  done
  for i in "${pids[@]}"; do
    wait "${i}" || rc=1
  done
  ((rc == 0)) || return 1
  for ((i = 1; i <= count; i++)); do
    e2e_host_prepare "${prefix}${i}" || return 1
  done
}

bench_deploy_hosts_down() {
  local prefix="$1" count="$2" i
  for ((i = 1; i <= count; i++)); do
    host_down "${prefix}${i}" || true
  done
}

# Prints the sum over hosts PREFIX1..PREFIXN of SSH logins so far.
bench_ssh_sessions() {
  local prefix="$1" count="$2" i n total=0
  for ((i = 1; i <= count; i++)); do
    n="$(host_sshd_log "${prefix}${i}" | grep -c 'Accepted publickey' || true)"
    total=$((total + ${n:-0}))
  done
  printf '%s\n' "${total}"
}

# Prints the `+ N created` ... lines of pulumi's summary, joined with ", ".
bench_up_summary() {
  sed -nE 's/^ +([-+~]?[[:space:]]*[0-9]+ (created|updated|replaced|deleted|unchanged))$/\1/p' \
    "${E2E_LOG_DIR}/$1.log" | tr -s ' ' | paste -sd, - | sed 's/,/, /g'
}

# Waits (bounded) until COUNT "jail has started" messages have arrived in
# all; prints how many did.
bench_start_messages() {
  local count="$1" i n=0
  for ((i = 0; i < BENCH_START_WAIT_S * 5; i++)); do
    n="$(receiver_texts | grep -c '^Ban tool (nginx-bad-request) jail has started$' || true)"
    ((n >= count)) && break
    sleep 0.2
  done
  printf '%s\n' "${n}"
}

# VAR <- CPU time (1/100 s) all CPUs of the machine have been busy so far:
# the test hosts' remote work runs on this machine, beside the engine.
bench_cpu_busy_cs() {
  local -n _bench_busy="$1"
  local -a f
  read -ra f </proc/stat
  # cpu user nice system idle iowait irq softirq steal ...
  _bench_busy=$((f[1] + f[2] + f[3] + f[6] + f[7] + f[8]))
}

# VAR <- CPU time (1/100 s) of this shell's waited-for children so far (the
# engine: pulumi, node, the provider plugins), from bash's `times`.
bench_children_cpu_cs() {
  local -n _bench_child="$1"
  local line m s total=0 word
  # In this shell, not a command substitution (a subshell has no children).
  times >"${E2E_LOG_DIR}/times"
  line="$(sed -n 2p "${E2E_LOG_DIR}/times")"
  for word in ${line}; do
    m="${word%%m*}"
    s="${word#*m}"
    s="${s%s}"
    total=$((total + 10#${m} * 6000 + 10#${s%.*} * 100 + 10#${s#*.} / 10))
  done
  _bench_child="${total}"
}

bench_cs() {
  printf '%d.%02d s' "$(($1 / 100))" "$(($1 % 100))"
}

# "CPU: machine busy B of A core-s (P %), engine E" for BUSY_CS and ENGINE_CS
# centiseconds over WALL_US.
bench_cpu_text() {
  local busy_cs="$1" engine_cs="$2" wall_us="$3" avail_cs
  avail_cs=$((wall_us * $(nproc) / 10000))
  ((avail_cs > 0)) || avail_cs=1
  printf 'CPU: machine busy %s of %d.%02d core-s (%d %%), engine %s' "$(bench_cs "${busy_cs}")" \
    "$((avail_cs / 100))" "$((avail_cs % 100))" "$((busy_cs * 100 / avail_cs))" "$(bench_cs "${engine_cs}")"
}

# The default of `pulumi up --parallel` for this CLI on this machine.
bench_pulumi_parallel() {
  local p
  p="$(pulumi up --help 2>/dev/null | sed -nE 's/.*--parallel .*\(default ([0-9]+)\).*/\1/p' | head -n1)"
  printf '%s\n' "${p:-unknown}"
}

bench_deploy_not_measured() {
  local reason="$1" sizes="$2"
  bench_row "5 deploy" "first \`pulumi up\`, ${sizes} hosts; no-op \`up\`" "-" "-" "-" \
    "${BENCH_DEPLOY_TARGET}; no-op: ${BENCH_NOOP_TARGET}" "not measured: ${reason}"
}

# Measures one fleet of SIZE hosts; sets BENCH_DEPLOY_FIRST_US (0 on failure).
bench_deploy_size() {
  local size="$1" ref_us="$2" started_before="$3" first_index="$4"
  local prefix="n${size}h" stack="n${size}" i minute
  local -a specs=()
  BENCH_DEPLOY_FIRST_US=0
  bench_log "deploy: ${size} host(s): hosts up, stack init (not timed)"
  if ! bench_deploy_hosts_up "${prefix}" "${size}" "${first_index}"; then
    bench_error "deploy: ${size} test host(s) did not come up"
    bench_deploy_hosts_down "${prefix}" "${size}"
    return 0
  fi
  minute="$(e2e_quiet_minute)"
  for ((i = 1; i <= size; i++)); do
    specs+=("${prefix}${i}:${minute}")
  done
  if ! { e2e_stack_init "${stack}" "" "${specs[@]}" && e2e_set_webhook "${stack}" "${RECEIVER_URL}"; }; then
    e2e_show_log "stack-init-${stack}"
    bench_error "deploy: stack ${stack} could not be set up"
    bench_deploy_hosts_down "${prefix}" "${size}"
    return 0
  fi

  # Untimed warm-up: the program compiled and the plugins loaded once, so the
  # first timed `up` of the run (the 1-host reference) does not carry cold
  # caches the later ones do not. A preview opens no SSH session.
  e2e_pulumi "warmup-${stack}" preview --stack "${stack}" ||
    bench_error "deploy: warm-up preview of ${stack} failed (logs: ${E2E_LOG_DIR}/warmup-${stack}.log)"

  local before after_first after_noop first_us noop_us first_rc noop_rc cpu0 cpu1 eng0 eng1
  before="$(bench_ssh_sessions "${prefix}" "${size}")"
  bench_log "deploy: ${size} host(s): first up"
  bench_cpu_busy_cs cpu0
  bench_children_cpu_cs eng0
  bench_time_us first_us e2e_pulumi "up-${stack}" up --stack "${stack}" --yes --skip-preview "${BENCH_DEPLOY_UP_ARGS[@]}"
  first_rc="${BENCH_RC}"
  bench_cpu_busy_cs cpu1
  bench_children_cpu_cs eng1
  after_first="$(bench_ssh_sessions "${prefix}" "${size}")"
  bench_log "deploy: ${size} host(s): no-op up"
  bench_time_us noop_us e2e_pulumi "noop-${stack}" up --stack "${stack}" --yes --skip-preview "${BENCH_DEPLOY_UP_ARGS[@]}"
  noop_rc="${BENCH_RC}"
  after_noop="$(bench_ssh_sessions "${prefix}" "${size}")"

  local first_sessions=$((after_first - before)) noop_sessions=$((after_noop - after_first))
  local first_summary noop_summary starts met ratio
  first_summary="$(bench_up_summary "up-${stack}")"
  noop_summary="$(bench_up_summary "noop-${stack}")"
  starts=$(($(bench_start_messages $((started_before + size))) - started_before))
  BENCH_DEPLOY_STARTS=$((started_before + starts))

  if ((first_rc != 0)); then
    e2e_show_log "up-${stack}"
    bench_error "deploy: first up of ${size} host(s) exited ${first_rc}"
    bench_row "5 deploy" "first \`pulumi up\`, ${size} host(s)" "failed (exit ${first_rc})" "-" "-" \
      "${BENCH_DEPLOY_TARGET}" "no: the up failed"
    bench_deploy_hosts_down "${prefix}" "${size}"
    return 0
  fi
  ((starts == size)) || bench_error "deploy: ${starts} of ${size} start messages arrived within ${BENCH_START_WAIT_S} s"
  BENCH_DEPLOY_FIRST_US="${first_us}"
  local cpu_text
  cpu_text="$(bench_cpu_text $((cpu1 - cpu0)) $((eng1 - eng0)) "${first_us}")"
  local what="first \`pulumi up\`, ${size} host(s): ${first_sessions} SSH sessions, ${first_summary}; ${starts}/${size} start messages; ${cpu_text}"
  if ((size == 1 || ref_us == 0)); then
    bench_row "5 deploy" "${what} (the reference of the fleet rows)" \
      "$(bench_fmt_us "${first_us}")" "-" "-" "-" "-"
  else
    ratio="$(bench_ratio "${first_us}" "${ref_us}")"
    met="yes"
    if ((first_us > ref_us * 2)); then
      met="no: ${ratio}x the 1-host up"
      # Saturated: the N hosts' install work (fail2ban and nginx reloads)
      # shares this machine's CPUs with the engine, unlike a real fleet.
      (((cpu1 - cpu0) * 10000 * 10 < first_us * $(nproc) * 8)) ||
        met+=" (this machine's CPUs were saturated; the engine used $(bench_cs $((eng1 - eng0))) of the $(bench_cs $((cpu1 - cpu0))) busy, the rest is mostly the ${size} hosts' remote work, which a real fleet does on its own CPUs)"
    fi
    bench_row "5 deploy" "${what}" "$(bench_fmt_us "${first_us}")" \
      "$(bench_fmt_us "${ref_us}") (first up, 1 host)" "${ratio}x" "<= 2x 1 host" "${met}"
  fi

  met="yes"
  if ((noop_rc != 0)); then
    e2e_show_log "noop-${stack}"
    bench_error "deploy: no-op up of ${size} host(s) exited ${noop_rc}"
    met="no: the up failed (exit ${noop_rc})"
  elif grep -Eq '^ +[-+~]? *[0-9]+ (created|updated|replaced|deleted)$' "${E2E_LOG_DIR}/noop-${stack}.log"; then
    met="no: it changed resources (${noop_summary})"
  elif ((noop_sessions != 0)); then
    met="no: ${noop_sessions} SSH sessions"
  fi
  bench_row "5 deploy" "no-op \`pulumi up\`, ${size} host(s): ${noop_sessions} SSH sessions, ${noop_summary}" \
    "$(bench_fmt_us "${noop_us}")" "$(bench_fmt_us "${first_us}") (first up, same hosts)" \
    "$(bench_ratio "${noop_us}" "${first_us}")x" "${BENCH_NOOP_TARGET}" "${met}"
  bench_deploy_hosts_down "${prefix}" "${size}"
}

# bench_deploy WORK SIZE...: the first SIZE is the reference (1 host).
bench_deploy() {
  local work="$1"
  shift
  local -a sizes=("$@")
  local sizes_text="${sizes[*]}"
  sizes_text="${sizes_text// //}"
  bench_log "deploy: first and no-op \`pulumi up\` for ${sizes_text} host(s)"
  local missing
  missing="$(e2e_engine_missing)"
  if [[ -n "${missing}" ]]; then
    bench_deploy_not_measured "${missing}" "${sizes_text}"
    return 0
  fi
  # shellcheck source=../../tools/pulumi-env.sh
  source "${BENCH_REPO}/tools/pulumi-env.sh"

  bench_cleanup_add bench_deploy_teardown
  if ! hosts_init >/dev/null; then
    bench_deploy_not_measured "the test hosts' network could not be made (hosts_init)" "${sizes_text}"
    bench_deploy_teardown || true
    BENCH_CLEANUPS=("${BENCH_CLEANUPS[@]:0:${#BENCH_CLEANUPS[@]}-1}")
    return 0
  fi
  RECEIVER_WRAP=(nsenter "--net=/run/netns/$(lan_netns)" --)
  receiver_start --dir "${work}/deploy/receiver" --bind "$(lan_addr)"
  # shellcheck disable=SC2034 # read by receiver_start (receiver.bash)
  RECEIVER_WRAP=()
  e2e_project_init "${work}/deploy"
  local parallel
  BENCH_DEPLOY_UP_ARGS=()
  if [[ -n "${BENCH_DEPLOY_PARALLEL:-}" ]]; then
    BENCH_DEPLOY_UP_ARGS=(--parallel "${BENCH_DEPLOY_PARALLEL}")
    parallel="\`--parallel ${BENCH_DEPLOY_PARALLEL}\` (BENCH_DEPLOY_PARALLEL)"
  else
    parallel="\`--parallel\` left at its default ($(bench_pulumi_parallel) here)"
  fi
  bench_row "5 deploy" "engine: pulumi $(pulumi version), node $(node --version), ${parallel}; every host a fresh disposable host, up before timing, after an untimed \`pulumi preview\` (warm caches)" \
    "-" "-" "-" "-" "-"

  local size ref_us=0 index=1
  BENCH_DEPLOY_STARTS=0
  for size in "${sizes[@]}"; do
    bench_deploy_size "${size}" "${ref_us}" "${BENCH_DEPLOY_STARTS}" "${index}"
    index=$((index + size))
    ((ref_us != 0)) || ref_us="${BENCH_DEPLOY_FIRST_US}"
  done
  bench_deploy_teardown || true
  BENCH_CLEANUPS=("${BENCH_CLEANUPS[@]:0:${#BENCH_CLEANUPS[@]}-1}")
}
