# shellcheck shell=bash
# Benchmark 10 (issue 11): a fleet's monitor offsets. bench/lib/offsets.ts
# runs the real scripts/at-offset.sh for FLEETS fleets of HOSTS random EC2
# instance ids and reads the offset each host derives; the reference is the
# 0-9 minute draw of earlier versions (all of a minute's hosts post on its
# second 0). Sourced by run.sh.

bench_offsets() {
  local work="$1" hosts="$2" fleets="$3" node="${BENCH_REPO}/node_modules/.bin/node" out
  bench_log "fleet offsets: ${hosts} hosts, ${fleets} fleets of random instance ids"
  [[ -x "${node}" ]] || node=node
  out="${work}/offsets.json"
  if ! (cd "${BENCH_REPO}" && "${node}" --import tsx bench/lib/offsets.ts "${hosts}" "${fleets}") >"${out}"; then
    bench_error "offsets: at-offset.sh failed"
    return 0
  fi
  local median worst ref_median ref_worst distinct gap met=no
  median="$(jq -r '.program.median' "${out}")"
  worst="$(jq -r '.program.worst' "${out}")"
  ref_median="$(jq -r '.reference.median' "${out}")"
  ref_worst="$(jq -r '.reference.worst' "${out}")"
  distinct="$(jq -r '.meanDistinctSeconds | floor' "${out}")"
  gap="$(jq -r '.meanGapSeconds' "${out}")"
  ((median <= 3)) && met=yes
  bench_row "10 fleet offsets" \
    "largest number of ${hosts} hosts posting in the same second, median of ${fleets} fleets (worst in brackets)" \
    "${median} (${worst})" "${ref_median} (${ref_worst}), 0-9 minute offset" \
    "$(bench_ratio "${median}" "${ref_median}")" "<= 3" "${met}"
  bench_row "10 fleet offsets" \
    "distinct seconds of the 600 s interval with a post, ${hosts} hosts (mean); mean gap between posts" \
    "${distinct} of 600; ${gap} s" "10 of 600; 60 s" "-" \
    "a gap above the chat service's 1 message/s" "$([[ "${gap%%.*}" -ge 1 ]] && echo yes || echo no)"
}
