# shellcheck shell=bash
# Benchmark 6: delivery under the chat service's rate limit. The HTTPS
# receiver in `pace 1` mode accepts one message per second and answers 429
# with Retry-After beyond that. COUNT messages are spooled as the host agent
# spools them (bench_spool), then `hostguard-notify flush` runs, again if
# it leaves something (its NOTIFY_BUDGET is 40 s per run), at most 10 times.
# Every message must arrive exactly once; the total time is compared with
# the floor of COUNT seconds. Sourced by run.sh (after ban.bash, which
# sources the receiver helpers).

bench_delivery_teardown() {
  receiver_stop
}

# Spools COUNT numbered messages.
bench_enqueue() {
  local count="$1" i
  for ((i = 1; i <= count; i++)); do
    printf 'bench message %02d\0' "${i}"
  done | bench_spool
}

bench_delivery() {
  local work="$1" count="$2"
  bench_log "delivery under a 1 message/s limit: ${count} spooled messages"
  local dir="${work}/delivery" root="${work}/delivery-root"
  bench_cleanup_add bench_delivery_teardown
  receiver_start --dir "${dir}" --mode "pace 1"
  receiver_make_root "${root}" NOTIFY_MAX_TIME=10 NOTIFY_ATTEMPTS=3 NOTIFY_BUDGET=40
  bench_enqueue "${count}"

  local start end flushes=0
  bench_now_us start
  bench_flush_spool "" "${work}/delivery-flush.log" 10 flushes
  bench_now_us end
  bench_delivery_teardown
  BENCH_CLEANUPS=("${BENCH_CLEANUPS[@]:0:${#BENCH_CLEANUPS[@]}-1}")

  local check refused
  check="$(python3 - "${RECEIVER_MESSAGES}" "${count}" <<'PY'
import collections, json, sys
texts = [json.loads(line)["payload"]["text"] for line in open(sys.argv[1], encoding="utf-8")]
want = ["bench message %02d" % i for i in range(1, int(sys.argv[2]) + 1)]
seen = collections.Counter(texts)
dup = sorted(t for t, n in seen.items() if n > 1)
lost = [t for t in want if t not in seen]
print("delivered=%d duplicates=%d lost=%d in_order=%s" % (
    len(texts), len(dup), len(lost), "yes" if texts == want else "no"))
PY
)"
  refused="$(grep -c '"status": 429' "${RECEIVER_REQUESTS}" || true)"
  local total=$((end - start)) floor=$((count * 1000000)) met ratio
  ratio="$(bench_ratio "${total}" "${floor}")"
  met="yes"
  if [[ "${check}" != "delivered=${count} duplicates=0 lost=0 in_order=yes" ]]; then
    met="no: ${check}"
    bench_error "delivery: ${check}"
  elif ((total * 10 > floor * 13)); then
    met="no: ${ratio}x the floor (${refused} answers 429)"
  fi
  bench_row "6 delivery" "${count} spooled messages, receiver allows 1/s (429 + Retry-After beyond); ${flushes} flush run(s), ${refused} answered 429; ${check}" \
    "$(bench_fmt_us "${total}")" "$(bench_fmt_us "${floor}") (floor: ${count} x 1 s)" \
    "${ratio}x the floor" "all once, <= 1.3x the floor" "${met}"
}
