#!/usr/bin/env bash
# The whole service without an AWS account (`npm run demo`, needs root on
# Linux). It first installs what is missing (tools/setup.bash: Debian
# packages, the npm packages with Node 22, the Pulumi engine and its command
# plugin; nothing when all is there), then brings up one disposable test host (test/e2e/lib/hosts.sh) and a local HTTPS
# webhook receiver standing in for the chat service; the real Pulumi engine
# deploys the repository's program to the host (hostguard:aws false); then
# one host alert (thresholds 0 and a monitor run) and one ban (a client with
# 10 denied requests) and the chat messages as they arrive. Cleans up at exit.
# Prints a loud NOT RUN banner and exits 0 when the engine cannot deploy,
# naming what is missing (the command plugin when it cannot be downloaded).
#
# Reads: tools/pulumi-env.sh and the engine cache; HG_DEMO_WAIT (seconds to
# wait for each message, default 60).
set -euo pipefail
umask 077

# shellcheck source=lib/runner.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/runner.sh"
# shellcheck source=../../tools/setup.bash
source "${E2E_REPO_ROOT}/tools/setup.bash"

readonly STACK=demo
readonly WAIT_S="${HG_DEMO_WAIT:-60}"
SHOWN=0

say() {
  printf '\n==> %s\n' "$*"
}

# Prints each message the receiver got since the last call, as the chat shows it.
show_new_messages() {
  local line i=0 text
  while IFS= read -r line; do
    i=$((i + 1))
    ((i > SHOWN)) || continue
    text="${line#*	}"
    text="${text%%	*}"
    printf '  [chat] %s\n' "${text//\\n/$'\n'         }"
  done < <(e2e_messages_since 0)
  SHOWN="${i}"
}

# wait_for REGEX: shows messages as they come until one matches.
wait_for() {
  local re="$1" i
  for ((i = 0; i < WAIT_S * 2; i++)); do
    show_new_messages
    if e2e_messages_since 0 | grep -Eq -- "${re}"; then
      return 0
    fi
    sleep 0.5
  done
  echo "demo: no such message within ${WAIT_S} s" >&2
  return 1
}

pul() {
  local log="$1"
  shift
  if ! e2e_pulumi "${log}" "$@"; then
    e2e_show_log "${log}" 60
    echo "demo: pulumi $1 failed" >&2
    return 1
  fi
}

cleanup() {
  if [[ -n "${E2E_PROJECT_DIR}" ]]; then
    say "pulumi destroy (uninstalls from the host)"
    e2e_pulumi demo-destroy destroy --stack "${STACK}" --yes || echo "destroy failed (the host goes anyway)"
  fi
  e2e_teardown
  echo "demo: cleaned up"
}

main() {
  local client addr i busy
  e2e_require_root "npm run demo" "the demo host needs network and mount namespaces"
  say "installing what is missing (nothing when all is there)"
  hg_setup_for_demo
  PATH="$(hg_tool_path)"
  export PATH
  e2e_require_engine "npm run demo"
  e2e_work_dir hg-demo
  trap cleanup EXIT

  say "one test host (sshd, nginx, fail2ban, cron) and the chat stand-in"
  hosts_init
  host_up web1 1
  client_up visitor 1
  e2e_receiver_start
  e2e_host_prepare web1
  addr="$(host_addr web1)"
  client="$(client_addr visitor)"
  echo "host web1 at ${addr}, visitor at ${client}, chat receiver at $(lan_addr)"

  say "stack '${STACK}': the same program, hostguard:aws false, bantime 30s"
  e2e_project_init "${E2E_WORK}"
  e2e_stack "${STACK}" "  hostguard:banBanTime: 30s
" "web1:$(e2e_quiet_minute)"

  say "pulumi up ($(pulumi version))"
  pul demo-up up --stack "${STACK}" --yes --skip-preview
  sed -n '/^Resources:/,/^Duration/p' "${E2E_LOG_DIR}/demo-up.log"
  wait_for 'jail has started'

  say "thresholds to 0 (pulumi config set + up), then the host monitor runs once"
  for i in cpuThreshold memoryThreshold diskThreshold; do
    pul "demo-set-${i}" config set --stack "${STACK}" "hostguard:${i}" 0
  done
  pul demo-up-thresholds up --stack "${STACK}" --yes --skip-preview
  # One core kept busy, so CPU is above 0 % too (an idle second can read 0.0).
  host_exec web1 timeout 3 sh -c 'while :; do :; done' &
  busy=$!
  host_exec web1 /usr/local/lib/hostguard/host-monitor >/dev/null
  wait "${busy}" || true # timeout ends the loop with 124
  wait_for 'High Disk Usage'

  say "the visitor asks 10 times for /.env (403 each): the jail bans it"
  for ((i = 1; i <= 10; i++)); do
    printf '  GET /.env -> %s\n' "$(client_curl visitor -o /dev/null -w '%{http_code}' "http://${addr}/.env" 2>/dev/null || true)"
  done
  wait_for 'Banned IP'
  printf '  visitor GET / while banned -> %s\n' \
    "$(client_curl visitor -o /dev/null -w '%{http_code}' "http://${addr}/" 2>/dev/null || true)"
  say "after the 30 s bantime"
  wait_for 'Unbanned IP'
  printf '  visitor GET / -> %s\n' "$(client_curl visitor -o /dev/null -w '%{http_code}' "http://${addr}/" 2>/dev/null || true)"
}

main "$@"
