# shellcheck shell=bash
# The web part's edits of users' files (the files nginx loads from
# NGINX_SERVER_CONF, and APP_PROPERTIES), in the transaction of install:
# hostguard/webedit.py resolves them by descriptor, reads and writes them
# with their controller's rights within one deadline and one byte bound per
# install, finds what to change (nginxconf.py, properties.py) and leaves the
# old and new content in the work directory; this file records each change
# in the manifest and the undo journal before it is written. Sourced by
# install, never run; needs lib/txn.sh.

readonly WEB_PROP_KEY=spring.web.resources.add-mappings
# The host agent's package: beside lib/ in a bundle and on the host.
WEB_AGENT_DIR="$(cd "${BASH_SOURCE[0]%/*}/.." && pwd -P)"
readonly WEB_AGENT_DIR
# Seconds all reads and writes of users' files may take (userio.
# TOTAL_SECONDS): one deadline for the checks before any write, one for the
# edit (or the undo) of the part, never one per file; the other parts' work
# (a fail2ban reload) does not count.
readonly WEB_SECONDS=60
WEB_DEADLINE=""

web_deadline() {
  WEB_DEADLINE=$((EPOCHSECONDS + WEB_SECONDS))
}

# Runs webedit.py's COMMAND with the run's root and deadline, then ARGS.
web_agent() {
  local command="$1"
  shift
  "${HOSTGUARD_PYTHON:-/usr/bin/python3}" -I -B -c \
    'import sys; sys.path.insert(0, sys.argv[1]); from hostguard.webedit import main; sys.exit(main(sys.argv[2:]))' \
    "${WEB_AGENT_DIR}" "${command}" --root "${HG_ROOT}" --deadline "${WEB_DEADLINE}" "$@"
}

# Refuses, before anything is written, what cannot be edited (webedit.py
# names the file and why on stderr).
web_preflight() {
  [[ -n "${HG_NGINX_SERVER_CONF}${HG_APP_PROPERTIES}" ]] || return 0
  web_deadline
  web_agent check --nginx "${HG_NGINX_SERVER_CONF}" --properties "${HG_APP_PROPERTIES}" || exit 1
}

# Writes each file CONTENT over the user's file REAL (LABEL: the setting
# that named it), as its controller; stdin: LABEL<TAB>REAL<TAB>CONTENT lines.
web_write() {
  web_agent write
}

# Applies the changes webedit.py planned (PLAN: its lines) in one step: every
# manifest record (for an install) and every journal entry first, then one
# process writes every file.
web_apply() {
  local undo="$1" plan="$2" tag kind label real copy content a b writes="" reload=0 line
  local -a records=() done_lines=()
  while IFS=$'\t' read -r tag kind label real copy content a b; do
    case "${tag}" in
      W) hg_log WARN "${kind}" ;;
      I) hg_log INFO "${kind}" ;;
      E)
        ((undo)) || records+=("${kind}"$'\t'"${real}"$'\t'"${a}")
        [[ "${kind}" != include ]] || reload=1
        txn_record_user "${label}" "${real}" "${copy}"
        writes+="${label}"$'\t'"${real}"$'\t'"${content}"$'\n'
        case "${kind}/${undo}" in
          include/0) done_lines+=("added the deny include to ${b} server and location block(s) of ${real}") ;;
          include/1) done_lines+=("removed the deny include from ${real}") ;;
          */0) done_lines+=("set ${WEB_PROP_KEY}=false in ${real}; restart the application to apply it") ;;
          *) done_lines+=("restored ${WEB_PROP_KEY} in ${real}") ;;
        esac
        ;;
    esac
  done <<<"${plan}"
  [[ -n "${writes}" ]] || return 0
  if ((!undo)); then
    ((reload == 0)) || records+=("reload"$'\t'"pending")
    manifest_add_all "${records[@]}"
    # shellcheck disable=SC2034 # read by install (services_apply)
    ((reload == 0)) || CHANGED=1
  fi
  printf '%s' "${writes}" | web_write || exit 1
  ((!undo || !reload)) || txn_reload_needed
  for line in "${done_lines[@]}"; do
    hg_log INFO "${line}"
  done
}

web_install() {
  local plan
  [[ -n "${HG_NGINX_SERVER_CONF}${HG_APP_PROPERTIES}" ]] || return 0
  web_deadline
  plan="$(web_agent plan --work "${WORK_DIR}" --nginx "${HG_NGINX_SERVER_CONF}" --properties "${HG_APP_PROPERTIES}")" \
    || exit 1
  web_apply 0 "${plan}"
}

# Undoes every record of a user's file in the manifest (include, props;
# prop and propadd of earlier versions) in one step, then drops them all.
web_undo_all() {
  local record kind undo="" plan
  for record in "${MANIFEST[@]}"; do
    kind="${record%%$'\t'*}"
    case "${kind}" in
      include | props | prop | propadd) undo+="${record}"$'\n' ;;
    esac
  done
  [[ -n "${undo}" ]] || return 0
  web_deadline
  plan="$(printf '%s' "${undo}" | web_agent undo --work "${WORK_DIR}")" || exit 1
  web_apply 1 "${plan}"
  manifest_drop_kinds include props prop propadd
}
