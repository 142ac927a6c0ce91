#!/usr/bin/env bats
# The nginx-bad-request filter against the annotated sample log, with the real
# fail2ban-regex: every line's verdict, counted address and time.

setup() {
  REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
  FILTER="${REPO}/scripts/fail2ban/filter.d/nginx-bad-request.local"
  FIXTURE="${REPO}/test/payload/fixtures/nginx-access.log"
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
