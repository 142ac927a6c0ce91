# shellcheck shell=bash
# Benchmark 3: fail2ban-regex throughput of the project's filter
# (scripts/fail2ban/filter.d/nginx-bad-request.local) and of the packaged
# /etc/fail2ban/filter.d/nginx-bad-request.conf on the same generated access
# log (bench/lib/gen-access-log.py, seeded), and their match counts against
# the counts the generator knows. Sourced by run.sh.

readonly BENCH_PACKAGED_FILTER=/etc/fail2ban/filter.d/nginx-bad-request.conf

# VAR <- the "matched" count of a fail2ban-regex output file.
bench_regex_matched() {
  local -n _bench_matched="$1"
  local file="$2" line
  _bench_matched=""
  while IFS= read -r line; do
    if [[ "${line}" =~ ^Lines:\ ([0-9]+)\ lines,\ [0-9]+\ ignored,\ ([0-9]+)\ matched ]]; then
      _bench_matched="${BASH_REMATCH[2]}"
    fi
  done <"${file}"
}

bench_filter() {
  local work="$1" lines="$2" runs="$3"
  bench_log "filter throughput: ${lines} lines through fail2ban-regex, median of ${runs}"
  if [[ ! -f "${BENCH_PACKAGED_FILTER}" ]]; then
    bench_row "3 filter" "throughput" "-" "-" "-" ">= 1.0" "not measured: no ${BENCH_PACKAGED_FILTER}"
    return 0
  fi
  # Each filter alone in its own folder: fail2ban-regex reads NAME.conf and
  # NAME.local beside the file it is given.
  mkdir -p "${work}/filter-project" "${work}/filter-packaged"
  cp "${BENCH_REPO}/scripts/fail2ban/filter.d/nginx-bad-request.local" "${work}/filter-project/"
  cp "${BENCH_PACKAGED_FILTER}" "${work}/filter-packaged/"
  local project="${work}/filter-project/nginx-bad-request.local"
  local packaged="${work}/filter-packaged/nginx-bad-request.conf"
  local log="${work}/access.log" counts
  counts="$(python3 "${BENCH_REPO}/bench/lib/gen-access-log.py" "${lines}" "${log}")"
  local want_project want_packaged want_403 ipv6
  want_project="$(jq -r .project <<<"${counts}")"
  want_packaged="$(jq -r .packaged <<<"${counts}")"
  want_403="$(jq -r .status403 <<<"${counts}")"
  ipv6="$(jq -r .ipv6 <<<"${counts}")"

  local -a project_us=() packaged_us=()
  local i us project_matched packaged_matched
  for ((i = 0; i < runs; i++)); do
    # Alternated, so a noisy neighbour costs both the same.
    bench_time_us us fail2ban-regex "${log}" "${project}" >"${work}/regex-project.out"
    ((BENCH_RC == 0)) || bench_error "fail2ban-regex with the project's filter exited ${BENCH_RC}"
    project_us+=("${us}")
    bench_time_us us fail2ban-regex "${log}" "${packaged}" >"${work}/regex-packaged.out"
    ((BENCH_RC == 0)) || bench_error "fail2ban-regex with the packaged filter exited ${BENCH_RC}"
    packaged_us+=("${us}")
  done
  bench_regex_matched project_matched "${work}/regex-project.out"
  bench_regex_matched packaged_matched "${work}/regex-packaged.out"

  local project_med packaged_med project_rate packaged_rate
  project_med="$(bench_median "${project_us[@]}")"
  packaged_med="$(bench_median "${packaged_us[@]}")"
  project_rate=$((lines * 1000000 / project_med))
  packaged_rate=$((lines * 1000000 / packaged_med))
  local ratio met="yes"
  ratio="$(bench_ratio "${project_rate}" "${packaged_rate}")"
  ((project_rate >= packaged_rate)) \
    || met="no: ${ratio}; it matches twice the lines (400 and 403), and fail2ban does more work per match"
  bench_row "3 filter" "lines/s through fail2ban-regex (whole process), ${lines} lines (${ipv6} IPv6), median of ${runs}" \
    "${project_rate}/s ($(bench_fmt_us "${project_med}"))" \
    "${packaged_rate}/s ($(bench_fmt_us "${packaged_med}")), packaged filter" \
    "${ratio}" ">= 1.0" "${met}"

  met="yes"
  if [[ "${project_matched}" != "${want_project}" || "${packaged_matched}" != "${want_packaged}" ]]; then
    met="no: expected ${want_project} and ${want_packaged}"
    bench_error "filter matches: project ${project_matched} (want ${want_project}), packaged ${packaged_matched} (want ${want_packaged})"
  elif ((want_403 == 0 || project_matched <= packaged_matched)); then
    met="no: the log has no 403 the project's filter counts"
    bench_error "filter benchmark: no 403 counted"
  fi
  bench_row "3 filter" "lines matched (log: ${want_403} with status 403)" \
    "${project_matched} (400 + 403 with a method)" "${packaged_matched} (400 only)" "-" \
    "project counts 403s, packaged does not" "${met}"
}
