#!/usr/bin/env bats
# The deny include placed by nginx's block structure, on a corpus of real-world
# site files (test/payload/fixtures/nginx-sites/): Debian's default site, one
# certbot edited (with its redirect block), a Spring Boot reverse proxy with
# ^~ locations and an upstream, the keyword and its brace on separate lines,
# one-line and nested blocks, braces in comments and strings, and a whole
# nginx.conf with a stream block; then the cases of issue 18: servers in
# files the site or nginx.conf includes (a wildcard, a relative path), a NUL
# in a comment, an include line the admin wrote before install, a `}` inside
# a word, rewrites the rule must see after, and includes refused. Each runs
# with root / inside private mount and network namespaces whose /etc/nginx,
# /var/lib, /var/log/nginx and /run are the test's copies: install runs the
# real `nginx -t`, the real nginx then serves every server block on its own
# ports (80, 443, ...), and uninstall must give back every byte. This
# machine's /etc/nginx is compared before and after.

load helpers/install

CORPUS="${BATS_TEST_DIRNAME}/fixtures/nginx-sites"

setup() {
  command -v nginx >/dev/null && command -v unshare >/dev/null \
    || { echo "nginx or unshare missing (.ci/run installs them): the test cannot run" >&2; false; }
  [[ -f /usr/lib/nginx/modules/ngx_stream_module.so ]] \
    || { echo "libnginx-mod-stream missing (.ci/run installs it): the test cannot run" >&2; false; }
  hg_make_payload
  S="${BATS_TEST_TMPDIR}/sandbox"
  hg_root_sandbox_make "${S}"
  rm -f "${S}/etc-nginx/sites-enabled/"*
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=example.test \
    -keyout "${S}/key.pem" -out "${S}/cert.pem" 2>/dev/null
  hg_listing /etc/nginx mtime >"${BATS_TEST_TMPDIR}/host-before"
}

teardown() {
  hg_listing /etc/nginx mtime >"${BATS_TEST_TMPDIR}/host-after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/host-before" "${BATS_TEST_TMPDIR}/host-after"
}

# Runs the script on stdin with root / in the sandbox namespaces.
in_sandbox() {
  hg_root_sandbox "${S}" bash -euo pipefail -s "$@"
}

# The probe script run inside: install, start nginx, probe every server
# block listed in the case's .probes file ("URL [PATH...]": the paths to
# probe, else the six of every case), stop nginx, uninstall.
readonly PROBE_SCRIPT='
payload="$1" conf="$2" probes="$3"
settings="${S_OUT}/settings.conf"
printf "NGINX_SERVER_CONF=%s\n" "${conf}" >"${settings}"
"${payload}/install" install --part web --root / --settings "${settings}"
cp -a /etc/nginx/. "${S_OUT}/installed-tree"
nginx
while read -r url paths; do
  scheme="${url%%://*}" hostport="${url#*://}"
  host="${hostport%:*}" port="${hostport##*:}"
  [[ -n "${paths}" ]] || paths="/.env /app/.env;x /.git/config /static/.git/HEAD /.well-known/x.bak /"
  for path in ${paths}; do
    code="$(curl -s -k -o /dev/null --max-time 5 --path-as-is -w "%{http_code}" \
      --resolve "${host}:${port}:127.0.0.1" "${scheme}://${host}:${port}${path}")"
    printf "%s %s %s\n" "${url}" "${path}" "${code}"
  done
done <"${probes}" >"${S_OUT}/answers"
nginx -s quit
for ((i = 0; i < 50; i++)); do [[ -s /run/nginx.pid ]] || break; sleep 0.1; done
"${payload}/install" uninstall --part web --root /
'

# Installs into, probes and uninstalls the corpus FILE placed at host path
# CONF of the sandbox (SITE: a site file in sites-enabled; MAIN: nginx.conf).
corpus_case() {
  local name="$1" kind="$2" conf dest original
  if [[ "${kind}" == MAIN ]]; then
    conf=/etc/nginx/nginx.conf
  else
    conf="/etc/nginx/sites-enabled/${name}"
  fi
  dest="${S}/etc-nginx${conf#/etc/nginx}"
  sed "s|@DIR@|${S}|g" "${CORPUS}/${name}" >"${dest}"
  original="${BATS_TEST_TMPDIR}/original"
  cp -- "${dest}" "${original}"
  sandbox_case "${conf}" "${CORPUS}/${name}.probes"
  cmp -- "${original}" "${dest}"
}

# Installs with NGINX_SERVER_CONF=CONF into the sandbox's /etc/nginx as the
# test laid it out, probes every server block listed in the file PROBES (one
# URL each), and uninstalls. Checks: one include per listed block in the
# whole tree, 403 for each denied path in each block, the site's own answer
# for /, and every byte of every file of the tree given back.
sandbox_case() {
  local conf="$1" probes="$2" want blocks url path code
  hg_listing "${S}/etc-nginx" >"${BATS_TEST_TMPDIR}/before"
  export S_OUT="${BATS_TEST_TMPDIR}"
  run in_sandbox "${PAYLOAD}" "${conf}" "${probes}" <<<"${PROBE_SCRIPT}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "nginx configuration tested"
  blocks="$(grep -c . "${probes}")"
  # The deny answers 403 in each block; the site's own answer for /.
  echo "--- answers:" && cat "${BATS_TEST_TMPDIR}/answers"
  [[ "$(grep -c . "${BATS_TEST_TMPDIR}/answers")" -eq "$(awk '{ n += (NF > 1) ? NF - 1 : 6 } END { print n }' "${probes}")" ]]
  while read -r url path code; do
    if [[ "${path}" == / ]]; then
      [[ "${code}" != 403 && "${code}" != 000 ]] || { echo "${url}/ -> ${code}" >&2; false; }
    else
      [[ "${code}" == 403 ]] || { echo "${url}${path} -> ${code}" >&2; false; }
    fi
  done <"${BATS_TEST_TMPDIR}/answers"
  # Exactly one include per http server block: as many as the case lists
  # (the locations' own are marked "(location)").
  want="$(grep -a -r -c -E '^[[:blank:]]*include /etc/nginx/snippets/hostguard-deny.conf; # hostguard( [0-9a-f]{16})?( \(line split\))?$' \
    "${BATS_TEST_TMPDIR}/installed-tree" | awk -F: '{ n += $NF } END { print n + 0 }')"
  echo "--- installed:" && grep -a -r -B2 'hostguard-deny.conf; # hostguard' "${BATS_TEST_TMPDIR}/installed-tree" || true
  [[ "${want}" -eq "${blocks}" ]]
  # Uninstall gives back every byte of every file of the tree.
  hg_listing "${S}/etc-nginx" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "corpus: Debian's default site (commented-out server blocks stay untouched)" {
  corpus_case debian-default SITE
}

@test "corpus: a site certbot edited, with its HTTPS block and its redirect block" {
  corpus_case certbot-redirect SITE
}

@test "corpus: a Spring Boot reverse proxy with ^~ locations and an upstream of server lines" {
  corpus_case spring-proxy SITE
}

@test "corpus: keyword and brace on separate lines, one-line and nested blocks, braces in comments and strings" {
  corpus_case odd-layout SITE
}

@test "corpus: a whole nginx.conf: http server blocks get it, stream and upstream server entries do not" {
  corpus_case main-with-stream.conf MAIN
}

@test "a file nginx would refuse, or one without an http server block, stops the install naming the file" {
  hg_make_root
  mkdir -p "${ROOT}/etc/nginx/sites-enabled"
  local site="${ROOT}/etc/nginx/sites-enabled/bad" text
  for text in 'server { listen 80;' 'server { listen 80 }' 'server { return 200 "x; }' \
    'stream { server { listen 1; proxy_pass a:1; } }' '# only a comment: server {'; do
    printf '%s\n' "${text}" >"${site}"
    printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/bad\n' >"${BATS_TEST_TMPDIR}/s.conf"
    hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
    run hg_install install --settings "${BATS_TEST_TMPDIR}/s.conf"
    echo "${text}: ${output}"
    [[ "${status}" -ne 0 ]]
    hg_assert_contains "${output}" "NGINX_SERVER_CONF: /etc/nginx/sites-enabled/bad:"
    hg_assert_contains "${output}" "the deny include cannot be placed"
    hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
    hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  done
}

# A server block answering 200 for every path (a .env too, without the rule).
open_server() {
  printf 'server {\n    listen %s;\n    server_name %s;\n    location / {\n        return 200 "%s\\n";\n    }\n}\n' "$1" "$2" "$2"
}

@test "includes: the server of a file a site includes with a wildcard gets the include too (issue 18, 6)" {
  mkdir -p "${S}/etc-nginx/extra"
  { open_server 80 a.test && printf 'include /etc/nginx/extra/*.conf;\n'; } >"${S}/etc-nginx/sites-enabled/site"
  open_server 8081 b.test >"${S}/etc-nginx/extra/b.conf"
  # Not a match of the wildcard (nginx's glob skips dot files): left alone.
  open_server 8082 hidden.test >"${S}/etc-nginx/extra/.hidden.conf"
  printf 'http://a.test:80\nhttp://b.test:8081\n' >"${BATS_TEST_TMPDIR}/probes"
  sandbox_case /etc/nginx/sites-enabled/site "${BATS_TEST_TMPDIR}/probes"
}

@test "includes: nginx.conf with its own server and a relative include of sites-enabled/*: every server gets it (issue 18, 6)" {
  cat >"${S}/etc-nginx/nginx.conf" <<'CONF'
user www-data;
worker_processes 1;
pid /run/nginx.pid;
error_log /var/log/nginx/error.log;
events { worker_connections 64; }
http {
    include mime.types;
    access_log /var/log/nginx/access.log;
    server { listen 80; server_name main.test; location / { return 200 "main\n"; } }
    include sites-enabled/*;
}
CONF
  open_server 8081 site.test >"${S}/etc-nginx/sites-enabled/site"
  { open_server 8082 two.test && open_server 8083 three.test; } >"${S}/etc-nginx/sites-enabled/two"
  printf 'http://main.test:80\nhttp://site.test:8081\nhttp://two.test:8082\nhttp://three.test:8083\n' >"${BATS_TEST_TMPDIR}/probes"
  sandbox_case /etc/nginx/nginx.conf "${BATS_TEST_TMPDIR}/probes"
}

@test "a NUL byte in a comment: nginx serves the site, install keeps every byte after it, uninstall gives back the file (issue 18, 8)" {
  local site="${S}/etc-nginx/sites-enabled/site"
  {
    printf 'server {\n    listen 80;\n    server_name a.test; # a NUL \0 in a comment\n'
    printf '    location / {\n        return 200 "a\\n";\n    }\n}\n'
    open_server 8081 b.test
  } >"${site}"
  cp -- "${site}" "${BATS_TEST_TMPDIR}/original"
  printf 'http://a.test:80\nhttp://b.test:8081\n' >"${BATS_TEST_TMPDIR}/probes"
  sandbox_case /etc/nginx/sites-enabled/site "${BATS_TEST_TMPDIR}/probes"
  # The installed file is the original plus the include lines, NUL kept.
  grep -a -v 'hostguard-deny.conf; # hostguard' "${BATS_TEST_TMPDIR}/installed-tree/sites-enabled/site" \
    | cmp - "${BATS_TEST_TMPDIR}/original"
  cmp "${BATS_TEST_TMPDIR}/original" "${site}"
}

@test "an include line the admin had before install stays after uninstall, with the admin's own snippet (issue 18, 10)" {
  local site="${S}/etc-nginx/sites-enabled/site"
  printf 'if ($uri ~ "/\\.env$") { return 403; } # the admin own rule\n' >"${S}/etc-nginx/snippets/hostguard-deny.conf"
  {
    printf 'server {\n    include /etc/nginx/snippets/hostguard-deny.conf; # hostguard\n'
    printf '    listen 80;\n    server_name a.test;\n    location / { return 200 "a\\n"; }\n}\n'
    open_server 8081 b.test
  } >"${site}"
  cp -- "${site}" "${BATS_TEST_TMPDIR}/original"
  printf 'http://a.test:80\nhttp://b.test:8081\n' >"${BATS_TEST_TMPDIR}/probes"
  sandbox_case /etc/nginx/sites-enabled/site "${BATS_TEST_TMPDIR}/probes"
  cmp "${BATS_TEST_TMPDIR}/original" "${site}"
  grep -q 'the admin own rule' "${S}/etc-nginx/snippets/hostguard-deny.conf"
}

@test "a } inside a word (add_header X a}b;) is read as nginx reads it: the include lands and nginx accepts the file (issue 18, 11)" {
  {
    printf 'server {\n    listen 80;\n    server_name a.test;\n    add_header X-Odd a}b;\n'
    printf '    add_header X-Var ${host}}x always; set $v "a{b";\n    location / { return 200 "a\\n"; }\n}\n'
    open_server 8081 b.test
  } >"${S}/etc-nginx/sites-enabled/site"
  printf 'http://a.test:80\nhttp://b.test:8081\n' >"${BATS_TEST_TMPDIR}/probes"
  sandbox_case /etc/nginx/sites-enabled/site "${BATS_TEST_TMPDIR}/probes"
}

@test "an include followed into a directory a user can write to, or of a missing file, is refused naming it, before any write (issue 18, 6)" {
  hg_make_root
  mkdir -p "${ROOT}/etc/nginx/sites-enabled" "${ROOT}/etc/nginx/extra"
  local site="${ROOT}/etc/nginx/sites-enabled/site"
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/site\n' >"${BATS_TEST_TMPDIR}/s.conf"
  printf 'server { listen 80; }\ninclude /etc/nginx/extra/*.conf;\n' >"${site}"
  printf 'server { listen 81; }\n' >"${ROOT}/etc/nginx/extra/b.conf"
  chown nobody "${ROOT}/etc/nginx/extra"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  run hg_install install --settings "${BATS_TEST_TMPDIR}/s.conf"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "NGINX_SERVER_CONF: /etc/nginx/sites-enabled/site line 2: include /etc/nginx/extra/*.conf:"
  hg_assert_contains "${output}" "only root can write to"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  chown root "${ROOT}/etc/nginx/extra"
  printf 'server { listen 80; }\n\ninclude extra/missing.conf;\n' >"${site}"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  run hg_install install --settings "${BATS_TEST_TMPDIR}/s.conf"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "NGINX_SERVER_CONF: /etc/nginx/sites-enabled/site line 3: include extra/missing.conf:"
  hg_assert_contains "${output}" "/etc/nginx/extra/missing.conf is missing"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "rewrites: a server-level rewrite, rewrite ... last and a rewrite without flag in a location do not get around the rule; break and try_files are warned about (issue 18, 7)" {
  mkdir -p "${S}/www/d"
  printf 'SECRET=1\n' >"${S}/www/d/.env"
  chmod -R a+rX "${S}/www"
  cat >"${S}/etc-nginx/sites-enabled/site" <<CONF
server {
    listen 80;
    server_name a.test;
    root ${S}/www;
    rewrite ^/srv/(.*)\.txt\$ /\$1;
    location / {
        rewrite ^/(.*)\.html\$ /\$1 last;
        return 200 "a\n";
    }
    location /b/ { rewrite ^/b/(.*)\.htm\$ /c/\$1; }
    location /c/ { return 200 "c\n"; }
    location /d/ {
        rewrite ^/d/(.*)\.php\$ /d/\$1 break;
    }
    location /e/ { try_files \$uri \$uri.bak \$uri/ =404; }
}
CONF
  # Each path is rewritten to a denied one: /.env, /.git/config, /c/.git, ...
  printf 'http://a.test:80 /.env.html /.git/config.html /srv/.env.txt /srv/a/.git/HEAD.txt /b/.git.htm /b/x.bak.htm /\n' \
    >"${BATS_TEST_TMPDIR}/probes"
  sandbox_case /etc/nginx/sites-enabled/site "${BATS_TEST_TMPDIR}/probes"
  # What the rule cannot see is named, with its line.
  hg_assert_contains "${output}" "WARN /etc/nginx/sites-enabled/site line 13: this rewrite ... break serves another URI than the one the deny rule checked"
  hg_assert_contains "${output}" "WARN /etc/nginx/sites-enabled/site line 15: this try_files serves another URI"
  [[ "$(grep -c 'WARN' <<<"${output}")" -eq 2 ]]
}

@test "the null location: a rewrite that sends a URI to no location (last, no flag, server level) is caught by the location / install adds; uninstall gives back every byte (issue 23)" {
  mkdir -p "${S}/www/d"
  printf 'SECRET=1\n' >"${S}/www/.env"
  printf 'SECRET=2\n' >"${S}/www/d/.env"
  printf 'page\n' >"${S}/www/page.html"
  printf 'home\n' >"${S}/www/index.html"
  chmod -R a+rX "${S}/www"
  # nginx's workers (not root) serve these files: the test's own temp
  # folders above them get a+x (bounded: up to bats' run folder).
  local dir="${S}"
  while [[ "${dir}" == "${BATS_RUN_TMPDIR}"/* ]]; do
    chmod a+x "${dir}"
    dir="${dir%/*}"
  done
  chmod a+x "${BATS_RUN_TMPDIR}"
  # No catch-all location: whatever a rewrite sends to no location is
  # served from the server itself, after every location's check.
  cat >"${S}/etc-nginx/sites-enabled/site" <<CONF
server {
    listen 80;
    server_name n.test;
    root ${S}/www;
    rewrite ^/s/(.*)\.txt\$ /\$1;
    location /r/ { rewrite ^/r/(.*)\.txt\$ /\$1 last; }
    location /w/ {
        rewrite ^/w/(.*)\.txt\$ /\$1;
    }
    location ~ \.php\$ { rewrite ^/(.*)\.php\$ /d/\$1 last; }
    location = /ok { return 200 "ok\n"; }
}
CONF
  printf 'http://n.test:80 /r/.env.txt /r/d/.env.txt /s/.env.txt /w/.env.txt /.env.php /\n' >"${BATS_TEST_TMPDIR}/probes"
  sandbox_case /etc/nginx/sites-enabled/site "${BATS_TEST_TMPDIR}/probes"
  # One location / holding only the include, marked for uninstall; the
  # server's own answers stay (its exact location, a static file under root).
  grep -c '^    location / { include /etc/nginx/snippets/hostguard-deny.conf; } # hostguard [0-9a-f]\{16\} (null location)$' \
    "${BATS_TEST_TMPDIR}/installed-tree/sites-enabled/site"
  [[ "$(grep -c 'null location' "${BATS_TEST_TMPDIR}/installed-tree/sites-enabled/site")" -eq 1 ]]
  run in_sandbox "${PAYLOAD}" <<'SCRIPT'
printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/site\n' >"${S_OUT}/settings.conf"
"$1/install" install --part web --root / --settings "${S_OUT}/settings.conf" >/dev/null
nginx
for path in /ok /page.html /r/page.html.txt; do
  printf '%s %s\n' "${path}" "$(curl -s --max-time 5 --resolve n.test:80:127.0.0.1 "http://n.test${path}")"
done
nginx -s quit
for ((i = 0; i < 50; i++)); do [[ -s /run/nginx.pid ]] || break; sleep 0.1; done
"$1/install" uninstall --part web --root / >/dev/null
SCRIPT
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "/ok ok"
  hg_assert_contains "${output}" "/page.html page"
  hg_assert_contains "${output}" "/r/page.html.txt page"
}

@test "the null location: a server that includes other files (its location / may be there) is warned about with file and line, not edited blind (issue 23)" {
  hg_make_root
  mkdir -p "${ROOT}/etc/nginx/sites-enabled" "${ROOT}/etc/nginx/locs"
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/site\n' >"${BATS_TEST_TMPDIR}/s.conf"
  printf 'server {\n    listen 80;\n    include /etc/nginx/locs/app.conf;\n    location /r/ {\n        rewrite ^/r/(.*)$ /$1 last;\n    }\n}\n' \
    >"${ROOT}/etc/nginx/sites-enabled/site"
  printf 'location = /x { return 204; }\n' >"${ROOT}/etc/nginx/locs/app.conf"
  run hg_install install --part web --settings "${BATS_TEST_TMPDIR}/s.conf"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "WARN /etc/nginx/sites-enabled/site line 5: this rewrite can send a URI to no location of its server"
  ! grep -q 'null location' "${ROOT}/etc/nginx/sites-enabled/site"
}

@test "linear in the files: a site including 400 files is installed and given back within 15 s each (issue 23; today's main: 30 s to install)" {
  hg_make_root
  mkdir -p "${ROOT}/etc/nginx/inc"
  printf 'server { listen 80; }\ninclude /etc/nginx/inc/*.conf;\n' >"${ROOT}/etc/nginx/site.conf"
  local i
  for ((i = 0; i < 400; i++)); do
    printf 'server {\n    listen %d;\n}\n' $((1000 + i)) >"${ROOT}/etc/nginx/inc/${i}.conf"
  done
  printf 'NGINX_SERVER_CONF=/etc/nginx/site.conf\n' >"${BATS_TEST_TMPDIR}/s.conf"
  hg_listing "${ROOT}/etc/nginx" >"${BATS_TEST_TMPDIR}/before"
  run timeout 15 "${PAYLOAD}/install" install --part web --root "${ROOT}" --settings "${BATS_TEST_TMPDIR}/s.conf"
  [[ "${status}" -eq 0 ]] || { echo "${output}" | tail -5; false; }
  [[ "$(grep -l 'hostguard-deny.conf; # hostguard' "${ROOT}"/etc/nginx/inc/*.conf | wc -l)" -eq 400 ]]
  run timeout 15 "${PAYLOAD}/install" uninstall --part web --root "${ROOT}"
  [[ "${status}" -eq 0 ]] || { echo "${output}" | tail -5; false; }
  hg_listing "${ROOT}/etc/nginx" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}
