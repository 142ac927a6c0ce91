# shellcheck shell=bash
# Bats helpers around test/helpers/webhook-receiver.py, the HTTPS stand-in for
# the chat webhook. Load with `load ../helpers/receiver` from test/payload/*.bats;
# the end-to-end tests and the benchmark source it.
#
#   receiver_start [--dir DIR] [--bind ADDR] [--port N] [--mode MODE] [--ip IP]... [--flavour F]
#       Makes a test CA in DIR (default $BATS_TEST_TMPDIR/receiver; extra IPs
#       for the server certificate with --ip, e.g. a namespace address),
#       starts the receiver in the background on a free port (or N: restart
#       after receiver_stop with --port "$RECEIVER_PORT"; the CA and the
#       recorded messages in DIR are kept) and waits (at
#       most 10 s) until it listens. Exports:
#         RECEIVER_DIR RECEIVER_PID RECEIVER_PORT RECEIVER_BIND
#         RECEIVER_URL          https://ADDR:PORT$RECEIVER_SECRET_PATH
#         RECEIVER_CA           CA that signed the receiver's certificate
#         RECEIVER_WRONG_CA     an unrelated CA (the "wrong certificate" fault)
#         RECEIVER_MESSAGES     one JSON line per delivered (200 ok) message
#         RECEIVER_REQUESTS     one JSON line per request: path, status, time
#         RECEIVER_MODE_FILE    the fault mode, re-read on every request
#       --flavour F: another chat service (mattermost, rocketchat, teams,
#       googlechat, discord, pagerduty, webhook; test/helpers/receiver_flavours.py):
#       RECEIVER_URL gets that service's URL shape (the sentinel in its secret
#       part) and RECEIVER_ROUTING_KEY is PagerDuty's routing key (the sentinel
#       and digits: 32 characters).
#       To run it inside a network namespace, prefix the command yourself:
#       RECEIVER_WRAP=(ip netns exec NS) receiver_start --bind 10.x.y.z ...
#   receiver_stop                  stops it (safe to call twice; use in teardown)
#   receiver_mode MODE [ARG...]    switches the fault mode atomically:
#       ok | status500 | ratelimit N | pace [N] | slow N | badbody |
#       status CODE TEXT | reject WORD CODE TEXT | nochannel |
#       retryafter N VALUE | echopath CODE | hang [N] | reset | chaos SEED
#       (Slack's answers; see test/helpers/webhook-receiver.py)
#   receiver_texts                 prints each recorded payload.text, one per
#                                  line, each newline inside shown as the two
#                                  characters \n (the SPEC's notation), all
#                                  else as is; for exact bytes use
#                                  receiver_payloads (JSON, key-sorted)
#   receiver_payloads              prints each recorded payload as compact JSON
#   receiver_count                 prints the number of delivered messages
#   receiver_wait_count N [SECS]   waits (default 10 s) until N are delivered
#   receiver_make_root [DIR] [KEY=VALUE...]
#       Writes a temp HOSTGUARD_ROOT (default $BATS_TEST_TMPDIR/root) with
#       etc/hostguard/hostguard.conf (NOTIFY_CA_FILE=$RECEIVER_CA, short
#       NOTIFY_MAX_TIME/BUDGET, then the given KEY=VALUE lines) and
#       etc/hostguard/webhook.conf (0600, url=$RECEIVER_URL, and for a
#       flavour its format=... line, PagerDuty's routing_key=... too).
#       Exports HOSTGUARD_ROOT. Call after receiver_start.
#
# The secret part of the URL is the sentinel $RECEIVER_SECRET_PATH: tests grep
# for RECEIVER_SENTINEL to prove the URL leaks nowhere.
# shellcheck source=process.bash
source "${BASH_SOURCE[0]%/*}/process.bash"

RECEIVER_SENTINEL="SENTINELsecret"
RECEIVER_SECRET_PATH="/services/T000/B000/${RECEIVER_SENTINEL}"
RECEIVER_HELPERS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export RECEIVER_ROUTING_KEY="${RECEIVER_SENTINEL}0123456789abcdef01"

# The path (and query) of each flavour's URL, its secret part the sentinel.
receiver_flavour_path() {
  case "$1" in
    slack) printf '%s' "/services/T000/B000/${RECEIVER_SENTINEL}" ;;
    mattermost) printf '%s' "/hooks/${RECEIVER_SENTINEL}0123456789ab" ;;
    rocketchat) printf '%s' "/hooks/abc123/${RECEIVER_SENTINEL}" ;;
    teams) printf '%s' "/powerautomate/automations/direct/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=${RECEIVER_SENTINEL}" ;;
    googlechat) printf '%s' "/v1/spaces/AAAA1234/messages?key=KEY0123&token=${RECEIVER_SENTINEL}" ;;
    discord) printf '%s' "/api/webhooks/123456789012345678/${RECEIVER_SENTINEL}" ;;
    pagerduty) printf '%s' "/v2/enqueue" ;;
    webhook) printf '%s' "/alertmanager/${RECEIVER_SENTINEL}" ;;
    *) return 64 ;;
  esac
}

receiver_start() {
  local dir="" bind=127.0.0.1 mode=ok port=0 flavour=slack
  local -a ips=()
  while (($#)); do
    case "$1" in
      --dir) dir="$2"; shift 2 ;;
      --bind) bind="$2"; shift 2 ;;
      --mode) mode="$2"; shift 2 ;;
      --ip) ips+=("$2"); shift 2 ;;
      --port) port="$2"; shift 2 ;;
      --flavour) flavour="$2"; shift 2 ;;
      *) echo "receiver_start: unknown option $1" >&2; return 64 ;;
    esac
  done
  dir="${dir:-${BATS_TEST_TMPDIR:?receiver_start needs --dir outside bats}/receiver}"
  mkdir -p "${dir}"
  if [[ "${bind}" != 127.0.0.1 && "${bind}" != ::1 && "${bind}" != 0.0.0.0 ]]; then
    ips+=("${bind}")
  fi
  [[ -f "${dir}/ca.pem" ]] || bash "${RECEIVER_HELPERS}/test-ca.sh" "${dir}" "${ips[@]}" || return 1
  # Kept across a restart in the same DIR (the "down" fault).
  touch "${dir}/messages.jsonl" "${dir}/requests.jsonl"
  : >"${dir}/port"
  printf '%s\n' "${mode}" >"${dir}/mode"
  # fd 3 closed: bats waits for it, and the receiver outlives the test body.
  "${RECEIVER_WRAP[@]+"${RECEIVER_WRAP[@]}"}" python3 "${RECEIVER_HELPERS}/webhook-receiver.py" \
    --cert "${dir}/server.pem" --key "${dir}/server.key" \
    --messages "${dir}/messages.jsonl" --requests "${dir}/requests.jsonl" \
    --mode-file "${dir}/mode" --bind "${bind}" --port "${port}" --flavour "${flavour}" \
    >"${dir}/port" 2>"${dir}/receiver.err" 3>&- &
  export RECEIVER_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s "${dir}/port" ]] && break
    if ! kill -0 "${RECEIVER_PID}" 2>/dev/null; then
      echo "receiver died on start:" >&2
      cat "${dir}/receiver.err" >&2
      return 1
    fi
    sleep 0.1
  done
  [[ -s "${dir}/port" ]] || { echo "receiver did not start in 10 s" >&2; return 1; }
  local host="${bind}"
  [[ "${host}" == *:* ]] && host="[${host}]"
  [[ "${host}" == 0.0.0.0 ]] && host=127.0.0.1
  export RECEIVER_DIR="${dir}" RECEIVER_BIND="${bind}"
  RECEIVER_PORT="$(head -n1 "${dir}/port")"
  export RECEIVER_PORT
  RECEIVER_SECRET_PATH="$(receiver_flavour_path "${flavour}")" || { echo "receiver_start: unknown flavour ${flavour}" >&2; return 64; }
  export RECEIVER_URL="https://${host}:${RECEIVER_PORT}${RECEIVER_SECRET_PATH}" RECEIVER_FLAVOUR="${flavour}"
  export RECEIVER_CA="${dir}/ca.pem" RECEIVER_WRONG_CA="${dir}/wrong-ca.pem"
  export RECEIVER_MESSAGES="${dir}/messages.jsonl"
  export RECEIVER_REQUESTS="${dir}/requests.jsonl"
  export RECEIVER_MODE_FILE="${dir}/mode"
}

receiver_stop() {
  [[ -n "${RECEIVER_PID:-}" ]] || return 0
  stop_process "${RECEIVER_PID}"
  RECEIVER_PID=""
}

receiver_mode() {
  printf '%s\n' "$*" >"${RECEIVER_MODE_FILE}.tmp"
  mv -f "${RECEIVER_MODE_FILE}.tmp" "${RECEIVER_MODE_FILE}"
}

receiver_texts() {
  python3 -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    record = json.loads(line)
    p = record["payload"]
    # A flavour records what its service shows as "text".
    t = record["text"] if "text" in record else p.get("text") if isinstance(p, dict) else None
    print(t.replace("\n", "\\n") if isinstance(t, str) else "<no text>")
' "${RECEIVER_MESSAGES}"
}

receiver_payloads() {
  python3 -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    print(json.dumps(json.loads(line)["payload"], ensure_ascii=False, sort_keys=True))
' "${RECEIVER_MESSAGES}"
}

receiver_count() {
  local n=0 line
  while IFS= read -r line; do
    n=$((n + 1))
  done <"${RECEIVER_MESSAGES}"
  echo "${n}"
}

receiver_wait_count() {
  local want="$1" secs="${2:-10}" i n
  for ((i = 0; i < secs * 10; i++)); do
    n="$(receiver_count)"
    ((n >= want)) && return 0
    sleep 0.1
  done
  echo "receiver_wait_count: wanted ${want}, got $(receiver_count)" >&2
  return 1
}

receiver_make_root() {
  local root="${BATS_TEST_TMPDIR:?}/root"
  if (($#)) && [[ "$1" != *=* ]]; then
    root="$1"
    shift
  fi
  mkdir -p "${root}/etc/hostguard"
  {
    echo "NOTIFY_CA_FILE=${RECEIVER_CA}"
    echo "NOTIFY_MAX_TIME=3"
    echo "NOTIFY_BUDGET=15"
    local line
    for line in "$@"; do
      echo "${line}"
    done
  } >"${root}/etc/hostguard/hostguard.conf"
  (
    umask 077
    printf 'url=%s\n' "${RECEIVER_URL}" >"${root}/etc/hostguard/webhook.conf"
    # A flavour's loopback URL names no service: the format line does (PagerDuty's key beside it).
    if [[ "${RECEIVER_FLAVOUR:-slack}" != slack ]]; then
      printf 'format=%s\n' "${RECEIVER_FLAVOUR}" >>"${root}/etc/hostguard/webhook.conf"
    fi
    if [[ "${RECEIVER_FLAVOUR:-slack}" == pagerduty ]]; then
      printf 'routing_key=%s\n' "${RECEIVER_ROUTING_KEY}" >>"${root}/etc/hostguard/webhook.conf"
    fi
  )
  chmod 0600 "${root}/etc/hostguard/webhook.conf"
  export HOSTGUARD_ROOT="${root}"
}

# Compares the delivered payload texts, exactly and in order, with the args;
# every payload must hold exactly one key, text.
receiver_expect_texts() {
  python3 - "${RECEIVER_MESSAGES}" "$@" <<'EOF'
import json, sys
got = []
for line in open(sys.argv[1], encoding="utf-8"):
    payload = json.loads(line)["payload"]
    assert isinstance(payload, dict) and set(payload) == {"text"}, payload
    got.append(payload["text"])
want = sys.argv[2:]
if got != want:
    print("delivered:", json.dumps(got, ensure_ascii=False, indent=1))
    print("expected: ", json.dumps(want, ensure_ascii=False, indent=1))
    sys.exit(1)
EOF
}

