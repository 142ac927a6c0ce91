#!/usr/bin/env bats
# The nginx-bad-request filter against the annotated sample log, with the real
# fail2ban-regex: every line's verdict, counted address and time. As in
# fail2ban's own samplestestcase.py, sample logs go by naming convention:
# every filter scripts/fail2ban/filter.d/NAME.(local|conf) has its sample
# test/payload/fixtures/fail2ban/logs/NAME, and every failregex line of it
# matches at least one sample line.

setup() {
  REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
  FILTER="${REPO}/scripts/fail2ban/filter.d/nginx-bad-request.local"
  FIXTURE="${REPO}/test/payload/fixtures/fail2ban/logs/nginx-bad-request"
  CHECK="${REPO}/test/payload/helpers/fail2ban-check-annotated"
}

show() {
  printf '%s\n' "${output}" >&2
}

@test "filter: every annotated line of the sample log gets its verdict (filter file alone)" {
  run "${CHECK}" "${FIXTURE}" "${FILTER}"
  show
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == *" 0 problem(s)"* ]]
}

@test "filter: as an override of the packaged filter in a fail2ban config dir" {
  [[ -f /etc/fail2ban/filter.d/nginx-bad-request.conf ]] \
    || skip "this fail2ban ships no nginx-bad-request.conf"
  local conf="${BATS_TEST_TMPDIR}/fail2ban"
  mkdir -p "${conf}/filter.d"
  cp /etc/fail2ban/filter.d/common.conf /etc/fail2ban/filter.d/nginx-bad-request.conf "${conf}/filter.d/"
  cp "${FILTER}" "${conf}/filter.d/"
  run "${CHECK}" "${FIXTURE}" -c "${conf}" nginx-bad-request
  show
  [[ "${status}" -eq 0 ]]
}

@test "filter: complete as a .local alone (fail2ban 0.11 has no packaged nginx-bad-request.conf)" {
  local conf="${BATS_TEST_TMPDIR}/fail2ban"
  mkdir -p "${conf}/filter.d"
  cp "${FILTER}" "${conf}/filter.d/"
  run "${CHECK}" "${FIXTURE}" -c "${conf}" nginx-bad-request
  show
  [[ "${status}" -eq 0 ]]
}

@test "filter: one address-anchored prefregex, then exactly two failregex patterns (400, 403), ignoreregex empty" {
  run fail2ban-regex "${FIXTURE}" "${FILTER}"
  show
  [[ "${status}" -eq 0 ]]
  local want
  want="$(grep -c '^# failJSON: .*"match": true' "${FIXTURE}")"
  [[ "${output}" == *"Failregex: ${want} total"* ]]
  [[ "${output}" == *"Ignoreregex: 0 total"* ]]
  [[ "${output}" == *"Prefregex: ${want} total"* ]]
  # The shared part: the address first, the status right after the request line.
  grep -Eq '^prefregex = \^<ADDR> .*" <F-CONTENT>40\[03\] ' "${FILTER}"
  [[ "${output}" =~ \|\ +1\)\ \[[0-9]+\]\ \^400$'\n' ]]
  [[ "${output}" =~ \|\ +2\)\ \[[0-9]+\]\ \^403$'\n' ]]
  [[ ! "${output}" =~ \|\ +3\)\ \[ ]]
  grep -Eq '^ignoreregex =[[:space:]]*$' "${FILTER}"
}

@test "filter: the checker fails when an annotation is wrong (it can fail)" {
  local bad="${BATS_TEST_TMPDIR}/wrong.log"
  # Flip the first expected match into a non-match, and give another match a wrong host.
  sed -e '0,/"match": true, "host": "198.51.100.10"/s//"match": false/' \
    -e 's/"host": "198.51.100.11"/"host": "6.6.6.6"/' "${FIXTURE}" >"${bad}"
  run "${CHECK}" "${bad}" "${FILTER}"
  show
  [[ "${status}" -ne 0 ]]
  [[ "${output}" == *"expected no match, counted ['198.51.100.10']"* ]]
  [[ "${output}" == *"counted '198.51.100.11', expected '6.6.6.6'"* ]]
}

@test "filter: the checker rejects a log line without an annotation" {
  local bad="${BATS_TEST_TMPDIR}/bare.log"
  cp "${FIXTURE}" "${bad}"
  echo '198.51.100.99 - - [01/May/2024:11:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-"' >>"${bad}"
  run "${CHECK}" "${bad}" "${FILTER}"
  show
  [[ "${status}" -ne 0 ]]
  [[ "${output}" == *"log line without a failJSON annotation"* ]]
}

@test "filter: a loose filter (the packaged one's shape, any status text) fails the sample" {
  local loose="${BATS_TEST_TMPDIR}/loose.conf"
  printf '%s\n' '[Definition]' 'failregex = ^<HOST> .*"(?:GET|POST|HEAD|OPTIONS|PUT|DELETE|PATCH) .* 40[03]' \
    'ignoreregex =' 'datepattern = ^[^\[]*\[({DATE})' >"${loose}"
  run "${CHECK}" "${FIXTURE}" "${loose}"
  show
  [[ "${status}" -ne 0 ]]
  # 4030 and a 403 byte count are counted by it, and the fake address too.
  [[ "${output}" == *"expected no match, counted ['198.51.100.40']"* ]]
  [[ "${output}" == *"expected no match, counted ['198.51.100.51']"* ]]
}

# check_filter_samples FILTER_DIR LOG_DIR: every filter of FILTER_DIR has its
# sample LOG_DIR/NAME, the sample's annotations hold (the checker), and each
# failregex line has at least one hit in it. One line per problem; status 1
# when there is one.
check_filter_samples() {
  local filter_dir="$1" log_dir="$2" filter name sample out line n=0 problems=0
  for filter in "${filter_dir}"/*.local "${filter_dir}"/*.conf; do
    [[ -f "${filter}" ]] || continue
    n=$((n + 1))
    name="${filter##*/}"
    name="${name%.*}"
    sample="${log_dir}/${name}"
    if [[ ! -f "${sample}" ]]; then
      printf 'filter %s: no sample log %s\n' "${name}" "${sample}"
      problems=$((problems + 1))
      continue
    fi
    if ! out="$("${CHECK}" "${sample}" "${filter}" 2>&1)"; then
      printf 'filter %s: the sample does not hold:\n%s\n' "${name}" "${out}"
      problems=$((problems + 1))
    fi
    # -v: the "Failregex:" block then lists every pattern, those without a
    # hit too, with its hits: "|   2) [12] ^403".
    out="$(fail2ban-regex -v "${sample}" "${filter}")" || { printf 'filter %s: fail2ban-regex failed\n' "${name}"; problems=$((problems + 1)); continue; }
    while IFS= read -r line; do
      if [[ "${line}" =~ ^\|\ +[0-9]+\)\ \[0\]\ (.*)$ ]]; then
        printf 'filter %s: failregex %s matches no line of its sample\n' "${name}" "${BASH_REMATCH[1]}"
        problems=$((problems + 1))
      fi
    done < <(sed -n '/^Failregex:/,/^`-/p' <<<"${out}")
    sed -n '/^Failregex:/,/^`-/p' <<<"${out}" | grep -Eq '^\| +1\) \[[0-9]+\] ' \
      || { printf 'filter %s: no failregex in the report\n' "${name}"; problems=$((problems + 1)); }
  done
  ((n > 0)) || { printf 'no filter in %s\n' "${filter_dir}"; problems=1; }
  printf '%d filter(s), %d problem(s)\n' "${n}" "${problems}"
  ((problems == 0))
}

@test "samples by naming convention: every filter has its sample log, every failregex (400 and 403) a matching line" {
  run check_filter_samples "${REPO}/scripts/fail2ban/filter.d" "${REPO}/test/payload/fixtures/fail2ban/logs"
  show
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == *"1 filter(s), 0 problem(s)"* ]]
  # Both of the SPEC's patterns are there to be covered.
  run fail2ban-regex "${FIXTURE}" "${FILTER}"
  [[ "${output}" =~ \|\ +1\)\ \[[1-9][0-9]*\]\ \^400$'\n' ]]
  [[ "${output}" =~ \|\ +2\)\ \[[1-9][0-9]*\]\ \^403$'\n' ]]
}

@test "samples by naming convention: a filter without a sample, or a failregex no sample line matches, fails by name" {
  local filters="${BATS_TEST_TMPDIR}/filter.d" logs="${BATS_TEST_TMPDIR}/logs"
  mkdir -p "${filters}" "${logs}"
  cp "${FILTER}" "${filters}/"
  cp "${FIXTURE}" "${logs}/nginx-bad-request"
  # A third pattern (404) that no sample line has, and a filter with no sample.
  sed -i 's/^            \^403$/            ^403\n            ^404/' "${filters}/nginx-bad-request.local"
  grep -qx '            ^404' "${filters}/nginx-bad-request.local"
  cp "${FILTER}" "${filters}/other.conf"
  run check_filter_samples "${filters}" "${logs}"
  show
  [[ "${status}" -ne 0 ]]
  [[ "${output}" == *"filter nginx-bad-request: failregex ^404 matches no line of its sample"* ]]
  [[ "${output}" == *"filter other: no sample log ${logs}/other"* ]]
  [[ "${output}" == *"2 filter(s), 2 problem(s)"* ]]
  # The sample without its 403 lines: that pattern is named too.
  rm "${filters}/other.conf"
  cp "${FILTER}" "${filters}/nginx-bad-request.local"
  awk '/^# failJSON:/ { note = $0; next } / 403 [0-9]+ / && note ~ /"match": true/ { note = ""; next } { if (note != "") print note; note = ""; print }' \
    "${FIXTURE}" >"${logs}/nginx-bad-request"
  run check_filter_samples "${filters}" "${logs}"
  show
  [[ "${status}" -ne 0 ]]
  [[ "${output}" == *"filter nginx-bad-request: failregex ^403 matches no line of its sample"* ]]
}
