# shellcheck shell=sh
# hostguard: the ban tool's messages into the notifier's intake. Sourced by
# the action lines of slack-notify.conf (fail2ban runs them with /bin/sh),
# after `set -- KIND JAIL ...` (ban: IP FAILURES TIME; unban: IP; start and
# stop: CHANNEL) and with hg_notify set to the notifier.
#
# Why not the notifier itself: fail2ban runs a jail's actions one ban after
# another and waits for each, so 100 bans at once would wait for 100
# interpreter start-ups before the last address is firewalled. Here a ban
# costs one write and executes nothing: the record is appended to ban.intake
# in the root-only spool directory, with no lock (the notifier takes whole
# records only, and empties the intake under a write lease, which holds this
# open for the microseconds of its truncation: hostguard/events.py). A lock
# program was most of a ban's cost. The first writer that creates the wake
# file .ban.wake (noclobber: O_EXCL) starts one detached notifier run; while
# the file exists a run is due to remove it and then look at the intake
# again, so later writers start nothing. The file holds that run's pid: a
# writer that finds it naming no process (the run was killed before removing
# it) removes it and starts a run itself.
#
# A record is one write of `\nKIND\tJAIL\t...\t.\n` (printf, a builtin of
# dash, Debian's /bin/sh, writes its output at once, and values of at most
# 255 bytes keep it far below its buffer; bash writes the leading newline
# apart, which the format allows): the leading newline keeps a record a full
# disk cut short apart from the next one, and a record without its final `.`
# is not read. Values the intake may not hold (a character outside the set
# below, a longer one, an empty address) and a failed write go to the
# notifier itself, which refuses or keeps them with its exit status (74:
# lost, disk full; 75: kept), so fail2ban's log still shows a failure.

hg_notify="${hg_notify:?the action sets hg_notify}"
umask 077
hg_spool="${HOSTGUARD_ROOT-}/var/spool/hostguard"
hg_fit=yes
for hg_value in "$@"; do
  case "${hg_value}" in *[!A-Za-z0-9._:/@#+-]*) hg_fit=no ;; esac
  [ "${#hg_value}" -le 255 ] || hg_fit=no
done
case "$1:$#" in
  ban:5) [ -n "$3" ] && [ -n "$4" ] && [ -n "$5" ] || hg_fit=no ;;
  unban:3) [ -n "$3" ] || hg_fit=no ;;
  start:3 | stop:3) ;;
  *) hg_fit=no ;;
esac

hg_event() {
  case "$1" in
    ban) "${hg_notify}" event ban --jail "$2" --ip "$3" --failures "$4" --time "$5" ;;
    unban) "${hg_notify}" event unban --jail "$2" --ip "$3" ;;
    *) "${hg_notify}" event "$1" --jail "$2" --channel "$3" ;;
  esac >/dev/null || [ $? -eq 75 ]
}

# Makes the wake file and starts the run it stands for, whose pid it then
# holds; fails when the file exists.
hg_wake() {
  set -C
  { true >"${hg_spool}/.ban.wake"; } 2>/dev/null || return 1
  "${hg_notify}" intake </dev/null >/dev/null 2>&1 &
  echo "$!" >|"${hg_spool}/.ban.wake"
}

if [ "${hg_fit}" = yes ] && {
  printf '\n%s\t%s\t%s\t%s\t%s\t.\n' "$@" >>"${hg_spool}/ban.intake"
} 2>/dev/null; then
  if ! hg_wake; then
    # A run is due, unless the one the file names is gone (killed before it
    # removed the file): then a new one. Empty: its writer is starting it.
    hg_pid=
    { read -r hg_pid <"${hg_spool}/.ban.wake"; } 2>/dev/null
    if [ -n "${hg_pid}" ] && ! kill -0 "${hg_pid}" 2>/dev/null; then
      rm -f -- "${hg_spool}/.ban.wake"
      hg_wake
    fi
  fi
  true
else
  hg_event "$@"
fi
