# shellcheck shell=bash
# Benchmark 11: a ban flood does not push out or delay a monitor alert
# (issue 18). COUNT ban-tool messages are spooled in the ban tool's queue
# (the texts of the ban tool's ban message) while the chat service is
# down, then one monitor alert (the host monitor's disk text); the receiver
# comes back in `pace 1` mode (one message per second, 429 beyond) and
# `hostguard-notify flush` runs until the spool is empty (at most 40 runs).
# Checked on what the receiver recorded: the alert is the first message
# delivered, and every ban arrives exactly once, in order (merged in bursts).
# The reference is the one FIFO queue of earlier versions: the alert behind
# COUNT messages at one per second. Run once per chat format of a distinct
# text limit and classifier (Slack, Discord, Google Chat, Teams: each its
# receiver flavour, test/helpers/receiver_flavours.py; PagerDuty gets no ban
# notice). Sourced by run.sh (after delivery.bash).

bench_flood_teardown() {
  receiver_stop
}

# Spools COUNT ban texts in the events queue, then the alert.
bench_flood_enqueue() {
  local count="$1" i
  for ((i = 1; i <= count; i++)); do
    printf 'Ban Alert(nginx-bad-request)\n Banned IP: *2001:db8::%x*\n Failures: 10 failure(s)\n Timestap: 1700000000\0' "${i}"
  done | bench_spool --events
  printf '[Server Alert] \nHigh Disk Usage Detected: 97%%\nSystem Uptime: up 3 days\0' | bench_spool
}

bench_flood() {
  local work="$1" count="$2" flavour
  for flavour in slack discord googlechat teams; do
    bench_flood_one "${work}" "${count}" "${flavour}"
  done
}

bench_flood_one() {
  local work="$1" count="$2" flavour="$3"
  bench_log "ban flood (${flavour}): ${count} ban events with the service down, then one monitor alert"
  local dir="${work}/flood-${flavour}" root="${work}/flood-root-${flavour}"
  bench_cleanup_add bench_flood_teardown
  receiver_start --dir "${dir}" --mode "pace 1" --flavour "${flavour}"
  receiver_make_root "${root}" NOTIFY_MAX_TIME=10 NOTIFY_ATTEMPTS=3 NOTIFY_BUDGET=40
  local port="${RECEIVER_PORT}"
  receiver_stop
  bench_flood_enqueue "${count}"
  receiver_start --dir "${dir}" --port "${port}" --mode "pace 1" --flavour "${flavour}"

  local start end flushes=0
  bench_now_us start
  bench_flush_spool "flood (${flavour}): " "${work}/flood-flush-${flavour}.log" 60 flushes
  bench_now_us end
  bench_flood_teardown
  BENCH_CLEANUPS=("${BENCH_CLEANUPS[@]:0:${#BENCH_CLEANUPS[@]}-1}")

  local check alert_after
  check="$(python3 - "${RECEIVER_MESSAGES}" "${count}" "${start}" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
texts = [r["text"] if "text" in r else r["payload"]["text"] for r in rows]
alert = "[Server Alert] \nHigh Disk Usage Detected: 97%\nSystem Uptime: up 3 days"
bans = []
for t in texts:
    if t != alert:
        bans.extend(t.split("\n\n"))
want = ["Ban Alert(nginx-bad-request)\n Banned IP: *2001:db8::%x*\n Failures: 10 failure(s)\n Timestap: 1700000000" % i
        for i in range(1, int(sys.argv[2]) + 1)]
first = "yes" if texts and texts[0] == alert else "no"
after = rows[0]["time"] - int(sys.argv[3]) / 1e6 if rows else -1
print("alert_first=%s bans_in_order_once=%s messages=%d alert_after_us=%d" % (
    first, "yes" if bans == want else "no", len(texts), int(after * 1e6)))
PY
)"
  alert_after="${check##*alert_after_us=}"
  check="${check% alert_after_us=*}"
  local total=$((end - start)) reference=$((count * 1000000)) met ratio
  ratio="$(bench_ratio "${alert_after}" "${reference}")"
  met="yes"
  if [[ "${check}" != "alert_first=yes bans_in_order_once=yes messages="* ]]; then
    met="no: ${check}"
    bench_error "flood (${flavour}): ${check}"
  fi
  bench_row "11 ban flood ${flavour}" "${count} ban events spooled with the service down, then 1 monitor alert; service back at 1 msg/s; ${flushes} flush run(s); ${check}; all delivered in $(bench_fmt_us "${total}")" \
    "alert delivered after $(bench_fmt_us "${alert_after}")" "$(bench_fmt_us "${reference}") (one FIFO: behind ${count} messages at 1/s)" \
    "${ratio}x" "the alert first; every ban once, in order" "${met}"
}
