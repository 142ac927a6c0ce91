# shellcheck shell=sh
# hostguard: the ban tool's messages into the notifier's intake. Sourced by
# the action lines of slack-notify.conf (fail2ban runs them with /bin/sh),
# after `set -- KIND JAIL ...` (ban: IP FAILURES TIME; unban: IP; start and
# stop: CHANNEL) and with hg_notify set to the notifier.
#
# Why not the notifier itself: fail2ban runs a jail's actions one ban after
# another and waits for each, so 100 bans at once would wait for 100
# interpreter start-ups before the last address is firewalled. Here a ban
# costs one flock(1) and one write: the record is appended to ban.intake in
# the root-only spool directory, under a shared lock (the notifier empties
# the intake only under its exclusive one, after committing its records to
# the spool database: hostguard/events.py). The first writer that creates
# the wake file .ban.wake (noclobber: O_EXCL) starts one detached notifier
# run, which writes its pid there; while the file exists a run is due to
# remove it and then look at the intake again, so later writers start
# nothing, unless the file names a process that is over (the run was killed
# before removing it): then the writer removes it and starts a run itself.
# An empty file is a run being started, or one that found the delivery lock
# held and left the intake to its holder (which looks at it after release).
#
# A record is one write of `\r\nKIND\tJAIL\tA\tB\tC\t.\n`, no two alike (a
# ban's time, or this shell's pid as C): a record a full disk cut short is
# followed by the next one's `\r`, never by a newline, so it is never read as
# whole (its writer handed the message to the notifier). Values the intake
# may not hold (a character outside the set below, one over 255 bytes, an
# empty address) and a failed write go to the notifier itself, which refuses
# or keeps them with its exit status (74: lost, disk full; 75: kept), so
# fail2ban's log still shows a failure.

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

# Makes the wake file and starts the run it stands for; fails when it exists.
hg_wake() {
  set -C
  { true >"${hg_spool}/.ban.wake"; } 2>/dev/null || return 1
  "${hg_notify}" intake </dev/null >/dev/null 2>&1 &
}

# A ban's last two values are its failures and time; the other records
# carry this shell's pid in their last one, unused.
hg_a="${4-}" hg_b="${5-}"
[ "$1" = ban ] || hg_a='' hg_b="$$"

if [ "${hg_fit}" = yes ] && {
  flock -s -w 10 9 && printf '\r\n%s\t%s\t%s\t%s\t%s\t.\n' "$1" "$2" "$3" "${hg_a}" "${hg_b}" >&9
} 2>/dev/null 9>>"${hg_spool}/ban.intake"; then
  if ! hg_wake; then
    # A run is due, unless the one the file names is over (gone, or a zombie
    # not reaped yet). Empty: one being started, or the delivery lock's
    # holder, which takes the intake after its release.
    hg_pid='' hg_state=''
    { read -r hg_pid <"${hg_spool}/.ban.wake"; } 2>/dev/null
    case "${hg_pid}" in
      '' | *[!0-9]*) ;;
      *)
        { read -r hg_state <"/proc/${hg_pid}/stat"; } 2>/dev/null
        case "${hg_state##*) }" in
          '' | Z*)
            rm -f -- "${hg_spool}/.ban.wake"
            hg_wake
            ;;
        esac
        ;;
    esac
  fi
  true
else
  hg_event "$@"
fi
