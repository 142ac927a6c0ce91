# shellcheck shell=bash
# Stopping a test's background server, shared by the receiver, nginx and
# fail2ban sandboxes. Sourced by those helpers.

# stop_process PID [SIGNAL]: sends SIGNAL (default TERM), waits up to 5 s for
# the process to end, then kills it and reaps it if it is our child.
stop_process() {
  local pid="$1" signal="${2:-TERM}" i
  kill "-${signal}" "${pid}" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "${pid}" 2>/dev/null || true
  wait "${pid}" 2>/dev/null || true
}
