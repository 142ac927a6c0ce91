# shellcheck shell=bash
# Helpers shared by the end-to-end scripts (through lib/runner.sh) and
# bench/lib/deploy.bash: decide whether the real Pulumi engine can deploy
# @pulumi/command here (and print a loud banner when it cannot), copy the
# program into a temp project, write a test stack of that same program
# (hostguard:aws false, hosts from hosts.sh) and run the CLI with every line
# of its output kept in a log.
#
# Reads: tools/pulumi-env.sh (the engine, its plugins), the repository's
# Pulumi.yaml, index.ts, components/, scripts/, node_modules; hosts.sh and
# receiver.bash must be sourced by the caller.
#
#   e2e_engine_missing          prints why the engine cannot deploy (empty: it can)
#   e2e_skip_banner WHO REASON  the loud "NOT RUN" banner on stderr
#   e2e_backend DIR             file:// backend in DIR/state, logs in DIR/logs, passphrase
#   e2e_project_init DIR        e2e_backend DIR and a temp copy of the program
#   e2e_stack_init STACK EXTRA NAME:MINUTE...  stack config for those hosts
#   e2e_set_webhook STACK URL   secret hostguard:webhookUrl, value on stdin only
#   e2e_pulumi LOG ARGS...      pulumi in the project, output in $E2E_LOG_DIR/LOG.log

E2E_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_REPO_ROOT="$(cd "${E2E_LIB_DIR}/../../.." && pwd)"
readonly E2E_STEP_TIMEOUT=600
# Where the hosts read the receiver's CA: private to each host (/etc is an
# overlay) and outside every path a deploy writes, so snapshots ignore it.
readonly E2E_HOST_CA=/etc/ssl/hostguard-e2e-ca.pem
E2E_PROJECT_DIR=""
E2E_LOG_DIR=""

# Prints the reason the engine cannot deploy the program, nothing if it can;
# installs the command plugin first when the network (or a supplied binary)
# allows (tools/pulumi-env.sh, hg_pulumi_engine_missing).
e2e_engine_missing() {
  if [[ ! -f "${E2E_REPO_ROOT}/tools/pulumi-env.sh" ]]; then
    echo "tools/pulumi-env.sh is missing"
    return 0
  fi
  # shellcheck source=../../../tools/pulumi-env.sh
  . "${E2E_REPO_ROOT}/tools/pulumi-env.sh"
  hg_pulumi_engine_missing
}

e2e_skip_banner() {
  local who="$1" reason="$2"
  {
    printf '\n%s\n' "################################################################################"
    printf '#  %s: NOT RUN. NO SCENARIO HAS BEEN TESTED.\n' "${who}"
    printf '#  Missing: %s\n' "${reason}"
    printf '#  Exiting 0 so that CI on a machine without it does not fail;\n'
    printf '#  this is a skip, not a pass.\n'
    printf '%s\n\n' "################################################################################"
  } >&2
}

# e2e_backend DIR: DIR/logs for the CLI's output, DIR/state as the file://
# backend, a fresh passphrase for the secrets.
e2e_backend() {
  local dir="$1"
  E2E_LOG_DIR="${dir}/logs"
  mkdir -p "${E2E_LOG_DIR}" "${dir}/state"
  export PULUMI_BACKEND_URL="file://${dir}/state"
  PULUMI_CONFIG_PASSPHRASE="e2e-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
  export PULUMI_CONFIG_PASSPHRASE
}

# e2e_project_init DIR: e2e_backend DIR, and the program's own files
# (Pulumi.yaml, index.ts, components/, scripts/) copied, so a test may edit a
# script there without touching the repository; node_modules linked.
e2e_project_init() {
  local dir="$1"
  e2e_backend "${dir}"
  E2E_PROJECT_DIR="${dir}/project"
  mkdir -p "${E2E_PROJECT_DIR}"
  cp -a "${E2E_REPO_ROOT}/Pulumi.yaml" "${E2E_REPO_ROOT}/index.ts" "${E2E_REPO_ROOT}/package.json" \
    "${E2E_REPO_ROOT}/tsconfig.json" "${E2E_REPO_ROOT}/components" "${E2E_REPO_ROOT}/scripts" \
    "${E2E_PROJECT_DIR}/"
  ln -s "${E2E_REPO_ROOT}/node_modules" "${E2E_PROJECT_DIR}/node_modules"
}

# e2e_pulumi LOG ARGS...: bounded in time, output in the log (and its exit status).
e2e_pulumi() {
  local log="$1"
  shift
  (cd "${E2E_PROJECT_DIR}" && timeout "${E2E_STEP_TIMEOUT}" pulumi --non-interactive --color never "$@") \
    >"${E2E_LOG_DIR}/${log}.log" 2>&1
}

e2e_show_log() {
  sed 's/^/    | /' "${E2E_LOG_DIR}/$1.log" | tail -n "${2:-40}" >&2
}

# e2e_stack_init STACK SETTINGS_YAML NAME[:MINUTE]...: the stack file of
# the test stack, then the SSH key as a secret (on stdin). SETTINGS_YAML holds
# extra `  hostguard:key: value` lines (hostguard:aws among them replaces the
# default false).
e2e_stack_init() {
  local stack="$1" extra="$2" spec name minute line
  shift 2
  e2e_pulumi "stack-init-${stack}" stack init "${stack}" --secrets-provider passphrase || return 1
  {
    printf 'config:\n'
    # AWS stays out unless the scenario's own settings switch it on.
    [[ "${extra}" == *"hostguard:aws:"* ]] || printf '  hostguard:aws: "false"\n'
    printf '  hostguard:sshUser: root\n'
    printf '  hostguard:notifyCaFile: %s\n' "${E2E_HOST_CA}"
    printf '  hostguard:notifyMaxTime: "5"\n'
    printf '  hostguard:notifyBudget: "20"\n'
    printf '  hostguard:nginxServerConf: /etc/nginx/sites-enabled/default\n'
    printf '%s' "${extra}"
    # The bundles are the same for every host: the minute is the stack's (the first spec's);
    # none (NAME alone): each host derives its offset (scripts/at-offset.sh).
    IFS=: read -r name minute <<<"$1"
    [[ -z "${minute}" ]] || printf '  hostguard:cronMinute: "%s"\n' "${minute}"
    printf '  hostguard:hosts:\n'
    for spec in "$@"; do
      IFS=: read -r name minute <<<"${spec}"
      line="$(host_known_hosts_line "${name}")"
      printf '    - name: %s\n      host: %s\n      user: root\n      hostKey: %s\n' \
        "${name}" "$(host_addr "${name}")" "${line#* }"
    done
  } >>"${E2E_PROJECT_DIR}/Pulumi.${stack}.yaml"
  e2e_pulumi "config-key-${stack}" config set --stack "${stack}" --secret hostguard:sshPrivateKey \
    <"$(host_ssh_key)"
}

# The URL only ever travels on stdin and in files of mode 0600.
e2e_set_webhook() {
  local stack="$1" url="$2"
  printf '%s' "${url}" | e2e_pulumi "config-webhook-${stack}" config set --stack "${stack}" --secret hostguard:webhookUrl
}

# e2e_host_prepare NAME: the receiver's CA where the stack's notifyCaFile
# points; and, where the host's docker does not answer (none, or a client
# without a daemon, as this machine's seen through the host's overlay of
# /usr/local), the test stand-in as the host's docker (install refuses the
# monitors part without a container runtime; the container monitor must check).
e2e_host_prepare() {
  host_exec "$1" install -D -m 0644 /dev/stdin "${E2E_HOST_CA}" <"${RECEIVER_CA}"
  host_exec "$1" docker ps --all --quiet >/dev/null 2>&1 ||
    host_exec "$1" install -D -m 0755 /dev/stdin /usr/local/bin/docker <"${E2E_REPO_ROOT}/test/helpers/fake-docker"
}

# A minute offset whose next firing is as late as possible (about 10 minutes
# away), so cron's own monitor runs stay out of a short test.
e2e_quiet_minute() {
  local m
  m="$(date +%M)"
  echo $((10#${m} % 10))
}

# e2e_pulumi_json LOG ARGS...: the same, stdout (JSON) in LOG.json, stderr in LOG.log.
e2e_pulumi_json() {
  local log="$1"
  shift
  (cd "${E2E_PROJECT_DIR}" && timeout "${E2E_STEP_TIMEOUT}" pulumi --non-interactive --color never "$@") \
    >"${E2E_LOG_DIR}/${log}.json" 2>"${E2E_LOG_DIR}/${log}.log"
}

# e2e_messages_since EPOCH: `URL<TAB>TEXT[<TAB>CHANNEL]` of each message the
# receiver got after EPOCH; URL is a label, never the secret path: `url1` for
# the path of E2E_URL1, `url2` for E2E_URL2, `url3` for E2E_URL3, else `other`. Newlines in TEXT
# are shown as \n (the SPEC's notation).
e2e_messages_since() {
  # Given to python only, not exported to pulumi and the rest.
  E2E_URL1="${E2E_URL1:-}" E2E_URL2="${E2E_URL2:-}" E2E_URL3="${E2E_URL3:-}" python3 -c '
import json, os, sys
since = float(sys.argv[2])
labels = {}
for name in ("E2E_URL1", "E2E_URL2", "E2E_URL3"):
    url = os.environ.get(name, "")
    if url:
        labels["/" + url.split("/", 3)[3]] = name[4:].lower()
for line in open(sys.argv[1], encoding="utf-8"):
    m = json.loads(line)
    if m["time"] <= since:
        continue
    p = m.get("payload") or {}
    t = p.get("text") if isinstance(p, dict) else None
    t = t.replace("\n", "\\n") if isinstance(t, str) else "<no text>"
    c = p.get("channel", "") if isinstance(p, dict) else ""
    print(labels.get(m["path"], "other") + "\t" + t + ("\t" + c if c else ""))
' "${RECEIVER_MESSAGES}" "$1"
}

# e2e_wait_message SINCE SECS REGEX: waits until a message after SINCE matches
# REGEX (grep -E on `PATH<TAB>TEXT[<TAB>CHANNEL]`), prints that line.
e2e_wait_message() {
  local since="$1" secs="$2" re="$3" i found
  for ((i = 0; i < secs * 5; i++)); do
    found="$(e2e_messages_since "${since}" | grep -E -m1 -- "${re}" || true)"
    if [[ -n "${found}" ]]; then
      printf '%s\n' "${found}"
      return 0
    fi
    sleep 0.2
  done
  printf '  no message matching /%s/ within %s s; got since then:\n' "${re}" "${secs}" >&2
  e2e_messages_since "${since}" | sed 's/^/    /' >&2
  return 1
}
