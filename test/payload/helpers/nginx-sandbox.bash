# shellcheck shell=bash
# Bats helpers: a real nginx on 127.0.0.1 with a temporary prefix, config,
# pid, logs and temp dirs (nothing under /etc/nginx or /var is touched).
# Load with `load helpers/nginx-sandbox`.
#
#   nginx_sandbox_write DIR SNIPPET   writes DIR/nginx.conf (one server on a
#       free loopback port, combined access log DIR/access.log, the SNIPPET
#       included first in the server block) and DIR/www; sets NGINX_DIR,
#       NGINX_PORT, NGINX_ACCESS_LOG
#   nginx_sandbox_test               `nginx -t` on that config
#   nginx_sandbox_start              starts it, waits (at most 10 s) until it answers
#   nginx_sandbox_stop               stops it (safe to call twice; use in teardown)
# shellcheck source=process.bash
source "${BASH_SOURCE[0]%/*}/process.bash"

nginx_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

nginx_sandbox_write() {
  local dir="$1" snippet="$2"
  mkdir -p "${dir}/www/.well-known/acme-challenge" "${dir}/tmp" "${dir}/logs"
  printf 'hello\n' >"${dir}/www/index.html"
  printf 'token\n' >"${dir}/www/.well-known/acme-challenge/x"
  NGINX_DIR="${dir}"
  NGINX_PORT="$(nginx_free_port)"
  NGINX_ACCESS_LOG="${dir}/logs/access.log"
  cat >"${dir}/nginx.conf" <<CONF
# Test-only nginx: everything under ${dir}.
worker_processes 1;
user root;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log info;
events {
    worker_connections 64;
}
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    client_body_temp_path ${dir}/tmp/body;
    proxy_temp_path ${dir}/tmp/proxy;
    fastcgi_temp_path ${dir}/tmp/fastcgi;
    scgi_temp_path ${dir}/tmp/scgi;
    uwsgi_temp_path ${dir}/tmp/uwsgi;
    # The predefined "combined" format, which the ban filter reads.
    access_log ${NGINX_ACCESS_LOG} combined;
    server {
        listen 127.0.0.1:${NGINX_PORT};
        server_name localhost;
        root ${dir}/www;
        include ${snippet};
        location / {
            try_files \$uri \$uri/ =404;
        }
    }
}
CONF
}

nginx_sandbox_cmd() {
  nginx -p "${NGINX_DIR}" -c "${NGINX_DIR}/nginx.conf" -e "${NGINX_DIR}/logs/error.log" "$@"
}

nginx_sandbox_test() {
  nginx_sandbox_cmd -t
}

nginx_sandbox_start() {
  nginx_sandbox_cmd 3>&- || return 1
  local i
  for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:${NGINX_PORT}/" && return 0
    sleep 0.1
  done
  echo "nginx did not answer on 127.0.0.1:${NGINX_PORT} within 10 s" >&2
  cat "${NGINX_DIR}/logs/error.log" >&2
  return 1
}

nginx_sandbox_stop() {
  [[ -n "${NGINX_DIR:-}" && -s "${NGINX_DIR}/nginx.pid" ]] || return 0
  local pid
  pid="$(<"${NGINX_DIR}/nginx.pid")"
  stop_process "${pid}" QUIT
  rm -f "${NGINX_DIR}/nginx.pid"
}
