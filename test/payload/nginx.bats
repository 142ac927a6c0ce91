#!/usr/bin/env bats
# The nginx deny snippet in a real nginx (temporary prefix, loopback ports),
# in four server blocks whose locations would skip a location-based rule (a
# `^~` prefix, a regex location before the include, its own /.well-known/
# location, HTTPS) and one with `merge_slashes off`: every denied ending, with path parameters, trailing
# slashes, encodings and dot segments, answers 403 text/html over a kept-alive
# connection in each; the ACME and security.txt paths and ordinary paths do
# not. The combined access log nginx writes is what the ban filter reads,
# including nginx's escaping of crafted quotes.

bats_require_minimum_version 1.5.0

setup_file() {
  load ../helpers/nginx-sandbox
  REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
  export REPO
  export SNIPPET="${REPO}/scripts/nginx/hostguard-deny.conf"
  export FILTER="${REPO}/scripts/fail2ban/filter.d/nginx-bad-request.local"
  nginx_sandbox_write_sites "${BATS_FILE_TMPDIR}/nginx" "${SNIPPET}"
  export NGINX_DIR NGINX_PORT NGINX_ACCESS_LOG
  # Arrays do not cross from setup_file to the tests: one "NAME=port" word each.
  local name
  SERVERS=""
  for name in "${!NGINX_PORTS[@]}"; do
    SERVERS+="${name}=${NGINX_PORTS[${name}]} "
  done
  export SERVERS
  nginx_sandbox_start
}

teardown_file() {
  load ../helpers/nginx-sandbox
  nginx_sandbox_stop
}

setup() {
  load ../helpers/nginx-sandbox
  BASE="http://127.0.0.1:${NGINX_PORT}"
}

# Prints "STATUS CONTENT-TYPE" of a GET of PATH (kept exactly as given) from
# server NAME (PLAIN by default).
probe() {
  local path="$1" name="${2:-PLAIN}"
  curl -s -o /dev/null --max-time 5 --path-as-is -k -w '%{http_code} %{content_type}' "$(server_url "${name}")${path}"
}

server_url() {
  local word
  for word in ${SERVERS}; do
    [[ "${word}" == "$1="* ]] || continue
    if [[ "$1" == HTTPS ]]; then
      printf 'https://localhost:%s' "${word#*=}"
    else
      printf 'http://127.0.0.1:%s' "${word#*=}"
    fi
    return 0
  done
  return 1
}

# Probes every PATH on every server; prints "SERVER PATH -> GOT" for each
# answer whose status is not WANT (or, for 403, not text/html).
expect_everywhere() {
  local want="$1" server path got
  shift
  for server in PLAIN STATIC PHP HTTPS RAW; do
    for path in "$@"; do
      got="$(probe "${path}" "${server}")"
      if [[ "${want}" == 403 ]]; then
        [[ "${got}" == "403 text/html" ]] && continue
      else
        [[ "${got%% *}" != 403 ]] && continue
      fi
      printf '%s %s -> %s\n' "${server}" "${path}" "${got}"
    done
  done
}

# Sends a raw HTTP/1.1 request (printf %b escapes) and prints the status line.
raw_request() {
  local reply
  reply="$(printf '%b' "$1" | timeout 5 curl -s --max-time 5 telnet://127.0.0.1:"${NGINX_PORT}" || true)"
  printf '%s\n' "${reply%%$'\r'*}"
}

# Copies the access log from byte START on to OUT once it holds LINES lines.
# nginx logs a request when its connection ends, which may be after the
# client has returned: waits (bounded, 5 s) for them.
wait_access_lines() {
  local start="$1" lines="$2" out="$3" wait
  for ((wait = 0; wait < 50; wait++)); do
    tail -c +"$((start + 1))" "${NGINX_ACCESS_LOG}" >"${out}"
    (($(wc -l <"${out}") >= lines)) && break
    sleep 0.1
  done
  cat "${out}" >&2
}

@test "nginx: nginx -t accepts the config with the snippet included" {
  run nginx_sandbox_test
  printf '%s\n' "${output}" >&2
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == *"test is successful"* ]]
}

@test "nginx: every denied ending answers 403 text/html in every server, any case, with query strings" {
  local -a paths=(
    /.env /app/.env /.ENV /x/.Env?debug=1
    /.config.env /srv/.CONFIG.env?a=b
    /.aws/credentials /home/u/.AWS/Credentials?x
    /.git /repo.GIT /x/.git?y=1
    /.git/config /.git/HEAD /x/.Git/objects/ab/cdef /.git/
    /db.bak /db.BAK?v=2 /index.php.old /index.php.OLD
    /config.dist /Config.DIST?z /settings.dev /settings.Dev
    /config.local /app.LOCAL?q=1
    /%2eenv /a/%2Egit/config //.git//config /.e%6Ev /a/b/../.env /a/./.git/config
  )
  run expect_everywhere 403 "${paths[@]}"
  [[ -z "${output}" ]] || { printf 'not denied as expected:\n%s\n' "${output}" >&2; false; }
}

@test "nginx: path parameters and trailing slashes do not get around the rule (issue 9)" {
  local -a paths=(
    "/app/.env;x" "/.git;/config" "/app/.aws/credentials;" "/app/.aws;a=b/credentials"
    "/app/.ENV;jsessionid=0123" "/x.bak;v=1" "/.git;x/HEAD" "/app/.env;" "/app/.env%3bx"
    "/a/.git;x" "/repo/.git;/objects/ab" "/app/.env/" "/app/.git/" "/db.bak//" "/app/.env;x/"
    "/app/.aws/credentials/" "/x.local/" "/x.OLD;/"
    "/app/.env/;x" "/app/.env;a/;b" "/db.bak//;jsessionid=1" "/app/.aws/credentials/;"
  )
  run expect_everywhere 403 "${paths[@]}"
  [[ -z "${output}" ]] || { printf 'not denied as expected:\n%s\n' "${output}" >&2; false; }
}

@test "nginx: with merge_slashes off, a path of many slashes or empty parameters gets its answer, not a 500 (issue 43)" {
  # Each ending run of `/` or `/;` doubled the rule's backtracking: nginx's
  # PCRE gave up at its match limit and answered 500 (which the jail does
  # not count). The time such a path costs is bench/run.sh's nginx row.
  local many="" i
  for ((i = 0; i < 60; i++)); do many+="/"; done
  [[ "$(probe "/.env${many}x" RAW)" == "404 "* ]]
  [[ "$(probe "/a.env${many//\//\/;}/x" RAW)" == "404 "* ]]
  [[ "$(probe "/app/.aws;x${many}credentials${many}x" RAW)" == "404 "* ]]
  [[ "$(probe "/.env${many}" RAW)" == "403 text/html" ]]
  [[ "$(probe "/a.env${many//\//\/;}" RAW)" == "403 text/html" ]]
  [[ "$(probe "/app/.aws;x${many}credentials${many}" RAW)" == "403 text/html" ]]
  ! grep -q 'pcre2\?_match() failed\|pcre_exec() failed' "${NGINX_DIR}/logs/error.log" || false
}

@test "nginx: ^~ prefix locations, earlier regex locations and /.well-known/ do not get around the rule (issue 9)" {
  local -a paths=(
    /static/.env /static/.git/config /static/x.bak "/static/.env;x" /static/a/.aws/credentials
    /static/.env/ /static/../.env /.git/config.php "/.git;/a.php" /x.env.bak /a/.git/x.php
    /.well-known/.env /.well-known/x.bak /.well-known/acme-challenge/.env
    /.well-known/acme-challenge/x.git /.well-known/.git/config /.well-known/security.txt.bak
    "/.well-known/acme-challenge/x;.env" /.well-known/acme-challenge/.git/HEAD
  )
  run expect_everywhere 403 "${paths[@]}"
  [[ -z "${output}" ]] || { printf 'not denied as expected:\n%s\n' "${output}" >&2; false; }
  # The files the rule hides do exist and would be served without it.
  [[ -f "${NGINX_DIR}/www/static/.env" ]]
}

@test "nginx: the 403 is nginx's Forbidden page over a kept-alive connection, in every server" {
  local server url
  for server in PLAIN STATIC PHP HTTPS RAW; do
    url="$(server_url "${server}")"
    run curl -s -k -i --max-time 5 "${url}/static/.env"
    printf '%s: %s\n' "${server}" "${output}" >&2
    [[ "${output}" == "HTTP/1.1 403 Forbidden"* ]]
    [[ "${output}" == *$'\r\nContent-Type: text/html\r\n'* ]]
    [[ "${output}" == *$'\r\nConnection: keep-alive\r\n'* ]]
    # Two requests, one connection: the second reuses the first's.
    run curl -s -k --max-time 5 -o /dev/null -o /dev/null -w '%{http_code}:%{num_connects} ' \
      "${url}/.env;x" "${url}/index.html"
    [[ "${output}" == "403:1 200:0 " ]] || { echo "${server}: ${output}" >&2; false; }
  done
}

@test "nginx: ACME challenges, security.txt and ordinary paths are not denied, in any server" {
  local -a served=(
    / /index.html /.well-known/acme-challenge/x /.well-known/security.txt /static/app.js
    "/?f=.env" "/index.html?file=/.git/config"
  )
  local server path got failures=()
  for server in PLAIN STATIC PHP HTTPS RAW; do
    for path in "${served[@]}"; do
      got="$(probe "${path}" "${server}")"
      [[ "${got%% *}" == 200 ]] || failures+=("${server} ${path} -> ${got} (want 200)")
    done
  done
  # The PHP site's own regex location still answers for ordinary .php paths.
  got="$(probe /index.php PHP)"
  [[ "${got%% *}" == 200 ]] || failures+=("PHP /index.php -> ${got} (want 200)")
  if ((${#failures[@]})); then
    printf 'wrong answer: %s\n' "${failures[@]}" >&2
    return 1
  fi
  # Near misses: whatever the site answers (404 mostly), never the rule's 403.
  local -a near=(
    /.well-known/acme-challenge/missing /.well-known/acme-challenge/Ab-_9z /missing
    /environment /a.envelope /a.gitx /.gitignore /.github/x.yml /git /old /x.old/page
    /my.git.repo/file /x.git.bak.txt /backup.bak.txt /localhost /development "/a;b/c.txt"
    /.envrc "/x.env;/y" /credentials /.aws/config
  )
  run expect_everywhere allowed "${near[@]}"
  [[ -z "${output}" ]] || { printf 'denied by mistake:\n%s\n' "${output}" >&2; false; }
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
  local log="${BATS_TEST_TMPDIR}/access.log"
  wait_access_lines "${start}" 17 "${log}"

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
  local log="${BATS_TEST_TMPDIR}/access.log"
  # Four requests, four lines.
  wait_access_lines "${start}" 4 "${log}"
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
