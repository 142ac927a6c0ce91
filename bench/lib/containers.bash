# shellcheck shell=bash
# Benchmark 2: the container monitor for 1, 10, 50 running containers with
# the stand-in runtime (test/helpers/fake-docker) whose `stats` sleeps 2 s as
# the real one does: runtime calls (from the fake's calls log) and wall time,
# against the one-stats-call-per-container reference
# (bench/reference/container-monitor) and against one single stats call.
# Sourced by run.sh.

readonly BENCH_STATS_SLEEP=2

# Writes the fake runtime's state: COUNT running containers, all quiet.
bench_fake_containers() {
  local file="$1" count="$2"
  python3 - "${file}" "${count}" <<'PY'
import json, sys
n = int(sys.argv[2])
out = [{"name": "app-%02d" % i, "image": "nginx:1.25", "state": "running",
        "cpu": "1.50%", "mem": "2.00%"} for i in range(1, n + 1)]
json.dump({"containers": out}, open(sys.argv[1], "w"))
PY
}

bench_calls() {
  local n=0
  while IFS= read -r _; do
    n=$((n + 1))
  done <"${FAKE_DOCKER_CALLS}"
  echo "${n}"
}

bench_containers() {
  local work="$1" runs="$2"
  shift 2
  local -a sizes=("$@")
  bench_log "container monitor: ${sizes[*]} containers, stats sleeps ${BENCH_STATS_SLEEP} s (${runs} run(s) of hostguard, 1 of the reference)"
  local root="${work}/containers-root" bin="${work}/bin"
  mkdir -p "${root}/etc/hostguard" "${bin}"
  printf '%s\n' CPU_THRESHOLD=80 MEMORY_THRESHOLD=90 CONTAINER_RUNTIME=docker \
    >"${root}/etc/hostguard/hostguard.conf"
  ln -sf "${BENCH_REPO}/test/helpers/fake-docker" "${bin}/docker"
  local ours="${BENCH_REPO}/scripts/container-monitor"
  local ref="${BENCH_REPO}/bench/reference/container-monitor"
  local -x PATH="${bin}:${PATH}"
  local -x FAKE_DOCKER_STATE="${work}/containers.json"
  local -x FAKE_DOCKER_CALLS="${work}/docker-calls.jsonl"
  local -x FAKE_DOCKER_STATS_SLEEP="${BENCH_STATS_SLEEP}"

  # The unit of the target: one stats call of one container.
  bench_fake_containers "${FAKE_DOCKER_STATE}" 1
  local -a single=()
  local i us
  for ((i = 0; i < runs; i++)); do
    bench_time_us us docker stats --no-stream --format '{{.CPUPerc}} {{.MemPerc}}' app-01 >/dev/null
    single+=("${us}")
  done
  local single_us
  single_us="$(bench_median "${single[@]}")"
  bench_row "2 container monitor" "one \`stats --no-stream\` call (the unit), median of ${runs}" \
    "$(bench_fmt_us "${single_us}")" "-" "-" "-" "-"

  local size calls ref_calls out ours_us ref_us met ratio
  local -a first_calls=() times=()
  for size in "${sizes[@]}"; do
    bench_fake_containers "${FAKE_DOCKER_STATE}" "${size}"
    rm -f "${root}/var/lib/hostguard/containers.running"
    times=()
    for ((i = 0; i < runs; i++)); do
      : >"${FAKE_DOCKER_CALLS}"
      HOSTGUARD_ROOT="${root}" bench_time_us us "${ours}" >"${work}/container-monitor.out"
      out="$(<"${work}/container-monitor.out")"
      ((BENCH_RC == 0)) || bench_error "container monitor exited ${BENCH_RC} for ${size}"
      [[ "${out}" == *"running=${size} "*"alerts=0"* ]] \
        || bench_error "container monitor (${size}) did not check ${size} quiet containers: ${out}"
      times+=("${us}")
    done
    calls="$(bench_calls)"
    first_calls+=("${calls}")
    ours_us="$(bench_median "${times[@]}")"

    : >"${FAKE_DOCKER_CALLS}"
    bench_time_us us "${ref}" >"${work}/ref-container-monitor.out"
    out="$(<"${work}/ref-container-monitor.out")"
    ((BENCH_RC == 0)) || bench_error "reference container monitor exited ${BENCH_RC} for ${size}"
    [[ "${out}" == "checked ${size} container(s)" ]] \
      || bench_error "reference container monitor (${size}): ${out}"
    ref_us="${us}"
    ref_calls="$(bench_calls)"

    met="yes"
    ((calls == first_calls[0])) || met="no: ${calls} calls, ${first_calls[0]} for ${sizes[0]}"
    bench_row "2 container monitor" "runtime calls per run, ${size} container(s)" \
      "${calls}" "${ref_calls}" "$(bench_ratio "${calls}" "${ref_calls}")" \
      "constant in the number of containers" "${met}"
    ratio="$(bench_ratio "${ours_us}" "${single_us}")"
    met="yes"
    ((ours_us * 2 <= single_us * 3)) || met="no: ${ratio}x one stats call"
    bench_row "2 container monitor" "wall time per run, ${size} container(s), median of ${runs} (reference: 1 run)" \
      "$(bench_fmt_us "${ours_us}")" "$(bench_fmt_us "${ref_us}")" \
      "${ratio}x one stats call; reference $(bench_ratio "${ref_us}" "${single_us}")x" \
      "<= 1.5x one stats call" "${met}"
  done
}
