#!/usr/bin/env bats
# The nginx deny snippet in a real nginx (temporary prefix, loopback port):
# every denied ending answers 403 text/html, other paths and the ACME path do
# not, and the combined access log nginx writes is what the ban filter reads,
# including nginx's escaping of crafted quotes.

bats_require_minimum_version 1.5.0

setup_file() {
  load helpers/nginx-sandbox
  REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
  export REPO
  export SNIPPET="${REPO}/scripts/nginx/hostguard-deny.conf"
  export FILTER="${REPO}/scripts/fail2ban/filter.d/nginx-bad-request.local"
  nginx_sandbox_write "${BATS_FILE_TMPDIR}/nginx" "${SNIPPET}"
  export NGINX_DIR NGINX_PORT NGINX_ACCESS_LOG
  nginx_sandbox_start
}

teardown_file() {
  load helpers/nginx-sandbox
  nginx_sandbox_stop
}

setup() {
  load helpers/nginx-sandbox
  BASE="http://127.0.0.1:${NGINX_PORT}"
}

# Prints "STATUS CONTENT-TYPE" of a GET of PATH (kept exactly as given).
probe() {
  curl -s -o /dev/null --max-time 5 --path-as-is -w '%{http_code} %{content_type}' "${BASE}$1"
}

# Sends a raw HTTP/1.1 request (printf %b escapes) and prints the status line.
raw_request() {
  local reply
  reply="$(printf '%b' "$1" | timeout 5 curl -s --max-time 5 telnet://127.0.0.1:"${NGINX_PORT}" || true)"
  printf '%s\n' "${reply%%$'\r'*}"
}

@test "nginx: nginx -t accepts the config with the snippet included" {
  run nginx_sandbox_test
  printf '%s\n' "${output}" >&2
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == *"test is successful"* ]]
}

@test "nginx: every denied ending answers 403 text/html, any case, with query strings" {
  local path got failures=()
  local -a paths=(
    /.env /app/.env /.ENV /x/.Env?debug=1
    /.config.env /srv/.CONFIG.env?a=b
    /.aws/credentials /home/u/.AWS/Credentials?x
    /.git /repo.GIT /x/.git?y=1
    /.git/config /.git/HEAD /x/.Git/objects/ab/cdef /.git/
    /db.bak /db.BAK?v=2 /index.php.old /index.php.OLD
    /config.dist /Config.DIST?z /settings.dev /settings.Dev
    /config.local /app.LOCAL?q=1
    /%2eenv /a/%2Egit/config //.git//config
  )
  for path in "${paths[@]}"; do
    got="$(probe "${path}")"
    [[ "${got}" == "403 text/html" ]] || failures+=("${path} -> ${got}")
  done
  if ((${#failures[@]})); then
    printf 'not denied as expected: %s\n' "${failures[@]}" >&2
    return 1
  fi
}

@test "nginx: the 403 is nginx's Forbidden page over a kept-alive connection" {
  run curl -s -i --max-time 5 "${BASE}/.env"
  printf '%s\n' "${output}" >&2
  [[ "${output}" == "HTTP/1.1 403 Forbidden"* ]]
  [[ "${output}" == *$'\r\nContent-Type: text/html\r\n'* ]]
  [[ "${output}" == *$'\r\nConnection: keep-alive\r\n'* ]]
}

@test "nginx: ordinary paths and /.well-known/ are not denied" {
  local entry path want got failures=()
  local -a cases=(
    "/ 200" "/index.html 200" "/.well-known/acme-challenge/x 200"
    "/.well-known/acme-challenge/missing 404" "/.well-known/security.txt 404"
    "/.well-known/x.env 404"
    "/missing 404" "/environment 404" "/a.envelope 404" "/a.gitx 404"
    "/git 404" "/old 404" "/x.old/page 404" "/my.git.repo/file 404"
    "/backup.bak.txt 404" "/localhost 404" "/development 404" "/?f=.env 200"
    "/index.html?file=/.git/config 200"
  )
  for entry in "${cases[@]}"; do
    path="${entry% *}"
    want="${entry##* }"
    got="$(probe "${path}")"
    [[ "${got%% *}" == "${want}" ]] || failures+=("${path} -> ${got} (want ${want})")
  done
  if ((${#failures[@]})); then
    printf 'wrong answer: %s\n' "${failures[@]}" >&2
    return 1
  fi
}

@test "nginx: the access log it writes is what the filter reads (403 and 400 lines count 127.0.0.1)" {
  local start
  start="$(stat -c %s "${NGINX_ACCESS_LOG}")"
  local path i
  for i in 1 2 3; do
    for path in /.env "/X.GIT?i=${i}" /.git/config /index.html /missing; do
      probe "${path}" >/dev/null
    done
  done
  # A request nginx rejects as malformed (400) with one of the SPEC's methods.
  raw_request 'GET /bad\x01 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' >/dev/null
  # A TLS handshake on the plain port: 400 without a method, not counted.
  raw_request '\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00' >/dev/null
  local log="${BATS_TEST_TMPDIR}/access.log" wait
  # nginx logs a request when its connection ends, which may be after the
  # client has returned: wait (bounded) for all 17 lines.
  for ((wait = 0; wait < 50; wait++)); do
    tail -c +"$((start + 1))" "${NGINX_ACCESS_LOG}" >"${log}"
    (($(wc -l <"${log}") >= 17)) && break
    sleep 0.1
  done
  cat "${log}" >&2

  # What should count, read from the log without the filter: status 400 or
  # 403 after the request line, with one of the SPEC's methods.
  local line request status expected=0 logged=0
  while IFS= read -r line; do
    logged=$((logged + 1))
    IFS='"' read -r _ request status _ <<<"${line}"
    status="${status# }"
    status="${status%% *}"
    if [[ "${status}" == 40[03] && "${request}" =~ ^(GET|POST|HEAD|OPTIONS|PUT|DELETE|PATCH)\  ]]; then
      expected=$((expected + 1))
    fi
  done <"${log}"
  [[ "${logged}" -eq 17 ]]
  [[ "${expected}" -eq 10 ]]

  run fail2ban-regex --out $'<ip>\t<msg>' "${log}" "${FILTER}"
  printf '%s\n' "${output}" >&2
  [[ "${status}" -eq 0 ]]
  local matched=0 ip msg
  while IFS=$'\t' read -r ip msg; do
    [[ -n "${ip}" ]] || continue
    matched=$((matched + 1))
    [[ "${ip}" == 127.0.0.1 ]]
    [[ "${msg}" =~ \"\ (400|403)\  ]]
  done <<<"${output}"
  [[ "${matched}" -eq "${expected}" ]]
}

@test "nginx: crafted quotes are logged as \\x22 and cannot inject an address or a status" {
  local start
  start="$(stat -c %s "${NGINX_ACCESS_LOG}")"
  local fake user
  fake='6.6.6.6 - - [01/May/2024:10:00:00 +0000] "GET / HTTP/1.1" 403 0 "-" "-"'
  user="$(printf '%s:pw' "${fake}" | base64 -w0)"
  # Request line, user agent, referer and Basic-auth user carrying quotes,
  # fake statuses and a fake address; the real answers are 400, 404, 404, 403.
  raw_request 'GET /inj" 403 0 "-" "-" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'
  raw_request "GET /ua HTTP/1.1\r\nHost: a\r\nUser-Agent: x\" 403 0 \"-\" \"-\r\nReferer: r\" 400 1 \"\r\nConnection: close\r\n\r\n"
  raw_request "GET /user HTTP/1.1\r\nHost: a\r\nAuthorization: Basic ${user}\r\nConnection: close\r\n\r\n"
  raw_request "GET /.env HTTP/1.1\r\nHost: a\r\nAuthorization: Basic ${user}\r\nConnection: close\r\n\r\n"
  local log="${BATS_TEST_TMPDIR}/access.log" wait
  # nginx logs a request when its connection ends, which may be after the
  # client has returned: wait (bounded) for all 17 lines.
  for ((wait = 0; wait < 50; wait++)); do
    tail -c +"$((start + 1))" "${NGINX_ACCESS_LOG}" >"${log}"
    (($(wc -l <"${log}") >= 17)) && break
    sleep 0.1
  done
  cat "${log}" >&2
  [[ "$(wc -l <"${log}")" -eq 4 ]]

  # nginx's escaping: every line keeps exactly the six quotes of the format.
  local line quotes
  while IFS= read -r line; do
    quotes="${line//[^\"]/}"
    [[ "${#quotes}" -eq 6 ]]
    [[ "${line}" == '127.0.0.1 - '* ]]
  done <"${log}"
  grep -qF '"GET /inj\x22 403 0 \x22-\x22 \x22-\x22 HTTP/1.1" 400 ' "${log}"
  grep -qF '"x\x22 403 0 \x22-\x22 \x22-"' "${log}"
  grep -qF '"r\x22 400 1 \x22"' "${log}"
  grep -qF '127.0.0.1 - 6.6.6.6 - - [01/May/2024 [' "${log}"

  run fail2ban-regex --out $'<ip>\t<msg>' "${log}" "${FILTER}"
  printf '%s\n' "${output}" >&2
  [[ "${status}" -eq 0 ]]
  # Counted: the real 400 (crafted request line) and the real 403, both as
  # 127.0.0.1; never 6.6.6.6, never the 404s.
  [[ "$(grep -c $'^127.0.0.1\t' <<<"${output}")" -eq 2 ]]
  [[ "$(grep -c . <<<"${output}")" -eq 2 ]]
  [[ "${output}" == *'"GET /inj\x22 403 0 \x22-\x22 \x22-\x22 HTTP/1.1" 400 '* ]]
  [[ "${output}" == *'"GET /.env HTTP/1.1" 403 '* ]]
  [[ "${output}" != *6.6.6.6$'\t'* ]]
}
