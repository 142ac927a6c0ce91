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

# Writes file CONTENT over the user's file REAL (LABEL: the setting that
# named it), as its controller.
web_write() {
  web_agent write -- "$1" "$2" "$3"
}

# Applies the changes webedit.py planned (lines on stdin): each recorded in
# the manifest (RECORD: its kind and arguments, empty for an undo) and the
# journal before the file is written.
web_apply() {
  local undo="$1" tag kind label real copy content a b
  while IFS=$'\t' read -r tag kind label real copy content a b; do
    case "${tag}" in
      W) hg_log WARN "${kind}" ;;
      I) hg_log INFO "${kind}" ;;
      E)
        if ((!undo)); then
          if [[ "${kind}" == include ]]; then
            manifest_add include "${real}" "${a}"
            txn_changed
          else
            manifest_add props "${real}" "${a}"
          fi
        fi
        txn_record_user "${label}" "${real}" "${copy}"
        web_write "${label}" "${real}" "${content}" || exit 1
        case "${kind}/${undo}" in
          include/0) hg_log INFO "added the deny include to ${b} server and location block(s) of ${real}" ;;
          include/1)
            txn_reload_needed
            hg_log INFO "removed the deny include from ${real}"
            ;;
          */0) hg_log INFO "set ${WEB_PROP_KEY}=false in ${real}; restart the application to apply it" ;;
          *) hg_log INFO "restored ${WEB_PROP_KEY} in ${real}" ;;
        esac
        ;;
    esac
  done
}

web_install() {
  local plan
  [[ -n "${HG_NGINX_SERVER_CONF}${HG_APP_PROPERTIES}" ]] || return 0
  web_deadline
  plan="$(web_agent plan --work "${WORK_DIR}" --nginx "${HG_NGINX_SERVER_CONF}" --properties "${HG_APP_PROPERTIES}")" \
    || exit 1
  web_apply 0 <<<"${plan}"
}

# Undoes one manifest record of a user's file: KIND (include, props; prop
# and propadd of earlier versions) of REAL, with the record's arguments (a
# props record on stdin: it may be longer than an argument may be).
web_undo() {
  local kind="$1" real="$2" first="$3" second="$4" plan
  [[ -n "${WEB_DEADLINE}" ]] || web_deadline
  if [[ "${kind}" == props ]]; then
    plan="$(web_agent undo --work "${WORK_DIR}" -- props "${real}" - <<<"${first}")" || exit 1
  else
    plan="$(web_agent undo --work "${WORK_DIR}" -- "${kind}" "${real}" "${first}" "${second}")" || exit 1
  fi
  web_apply 1 <<<"${plan}"
}
