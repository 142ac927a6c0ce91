# shellcheck shell=bash
# The README's Quick start, executed (issue 35): its fenced `sh` blocks, read
# from README.md in order (readme_blocks.py), run as a user would type them in
# a new terminal (a clean environment, HOME of their own, cwd a clone of the
# repository) against a disposable host that fits the README's "Does it fit"
# (an `admin` user with passwordless sudo reached over SSH, nginx on 443, the
# Spring file), with the engine built here and `pulumi login --local`. Then the
# Verify section's checks on the host, the Rotate runbook's commands and the
# Uninstall section's.
# It fails when the README and the program disagree: a command that fails, an
# output the README announces that does not come, a host not as before.
# Sourced by test/e2e/run.sh (scenario 17); needs its receiver, hosts and E2E_URL2.
#
#   qs_scenario    the whole path; fails naming the README line of the step
#
# What cannot run here verbatim, and what the test does instead (QS_SUBST,
# each entry must match a README line, else the table is stale and it fails):
#   - the first block's values: run as written, then HOST is the test host's
#     address (the README: "replace the values of the first block with
#     yours"), and the block's last line, which reads the webhook URL from the
#     terminal without echo, gets the receiver's URL instead; the rest keep
#     the README's example values, which only AWS reads;
#   - installing the Pulumi CLI (get.pulumi.com) and `npm ci`: the engine of
#     tools/pulumi-env.sh and the repository's node_modules are on PATH;
#   - AWS is moto's EC2 API (moto_start): an instance whose own group opens
#     everything, as a console launch leaves it (moto-ec2.ts setup-one), whose
#     ids are the first block's INSTANCE, VPC and GROUP; the terminal has
#     moto's endpoint and dummy credentials where `aws configure sso` would
#     have put real ones; `aws sts get-caller-identity` is not run (no AWS CLI
#     on every machine). The adopt path runs as written: the group's rules
#     become exactly hostguard's, and Uninstall's destroy brings the old back;
#   - before the first `pulumi preview`, the test's settings: the receiver's
#     CA (hostguard:notifyCaFile, a private CA), a cron minute whose next run
#     is far off, short notify timeouts;
#   - the user's home: /root through an overlay whose writes stay in the
#     test's directory (the deploy key, ~/.pulumi of `login --local`);
#   - "your existing access" to the host (an EC2 key pair): the run's key as
#     ~/.ssh/id_ed25519, the host's key in ~/.ssh/known_hosts (checked over a
#     trusted path, as the README asks);
#   - Verify's "every 10 minutes": the host monitor's cron line is run once
#     on the host, as cron would run it (not the container monitor's: no
#     Docker engine runs here);
# Not run: the README's "prod through a bastion" (no bastion here; its commands
# are a `text` block, the Quick start's own with -J and STACK=prod).

readonly QS_HOST=dev-web1
readonly QS_INDEX=40
readonly QS_USER=admin

# README line (as readme_blocks.py prints it) -> what runs instead ("" skips it).
# shellcheck disable=SC2016 # the README's own text, expanded by the user's shell
declare -A QS_SUBST=(
  ['curl -fsSL https://get.pulumi.com | sh && export PATH="$HOME/.pulumi/bin:$PATH"']=""
  ['npm ci && export PATH="$PWD/node_modules/.bin:$PATH"']='export PATH="$PWD/node_modules/.bin:$PATH"'
  ['aws sts get-caller-identity']=""
)

# qs_prepare_host: a server as "Does it fit" describes it: the packages (the
# machine's), an SSH user with passwordless sudo whose authorized_keys holds
# the key the user already has, nginx serving 443 from the site file
# Pulumi.dev.yaml names, the Spring file it names.
qs_prepare_host() {
  local pub home=/var/lib/qs-admin
  pub="$(ssh-keygen -y -f "$(host_ssh_key)")"
  host_exec "${QS_HOST}" useradd -m -d "${home}" -s /bin/bash "${QS_USER}"
  # UsePAM no: a locked password ("!") would refuse key logins too.
  host_exec "${QS_HOST}" usermod -p '*' "${QS_USER}"
  host_exec "${QS_HOST}" install -d -m 0700 -o "${QS_USER}" -g "${QS_USER}" "${home}/.ssh"
  printf '%s\n' "${pub}" | host_exec "${QS_HOST}" install -m 0600 -o "${QS_USER}" -g "${QS_USER}" /dev/stdin "${home}/.ssh/authorized_keys"
  printf '%s ALL=(ALL) NOPASSWD: ALL\n' "${QS_USER}" | host_exec "${QS_HOST}" install -m 0440 /dev/stdin /etc/sudoers.d/qs-admin
  # The site's certificate, made here: a Debian 13 host has no openssl program.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=dev-web1 \
    -keyout "${E2E_WORK}/qs-key.pem" -out "${E2E_WORK}/qs-cert.pem" 2>/dev/null || fail "openssl req failed"
  host_exec "${QS_HOST}" install -D -m 0600 /dev/stdin /etc/ssl/qs/key.pem <"${E2E_WORK}/qs-key.pem"
  host_exec "${QS_HOST}" install -D -m 0644 /dev/stdin /etc/ssl/qs/cert.pem <"${E2E_WORK}/qs-cert.pem"
  host_exec "${QS_HOST}" tee /etc/nginx/sites-available/default >/dev/null <<'EOF'
server {
    listen 443 ssl default_server;
    ssl_certificate /etc/ssl/qs/cert.pem;
    ssl_certificate_key /etc/ssl/qs/key.pem;
    location / {
        return 200 "the app\n";
    }
}
EOF
  host_exec "${QS_HOST}" install -D -m 0644 /dev/stdin /opt/app/config/application.properties <<<"server.port=8080"
  host_exec "${QS_HOST}" sh -c 'nginx -t 2>&1 && service nginx reload' >/dev/null || fail "${QS_HOST}: nginx on 443 did not start"
  e2e_host_prepare "${QS_HOST}"
}

# qs_user_home DIR: the user's home on the deploy machine: /root seen through
# an overlay whose writes land in DIR/root/upper (qs_run mounts it in a mount
# namespace of its own: ssh reads ~/.ssh from the passwd entry, not HOME), with
# their existing access to the host and its checked host key in ~/.ssh.
qs_user_home() {
  local dir="$1"
  install -d -m 0700 "${dir}/root/upper" "${dir}/root/work" "${dir}/root/upper/.ssh"
  # A new user's: no ~/.pulumi of the machine's (a whiteout hides it).
  mknod "${dir}/root/upper/.pulumi" c 0 0
  install -m 0600 "$(host_ssh_key)" "${dir}/root/upper/.ssh/id_ed25519"
  host_known_hosts_line "${QS_HOST}" >"${dir}/root/upper/.ssh/known_hosts"
  printf 'Host *\n  BatchMode yes\n  StrictHostKeyChecking yes\n' >"${dir}/root/upper/.ssh/config"
}

# qs_clone DIR: the repository's files as a clone has them (tracked and new,
# not ignored), node_modules linked.
qs_clone() {
  local dir="$1"
  mkdir -p "${dir}"
  (cd "${E2E_REPO_ROOT}" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp --parents -t "${dir}" 2>/dev/null) || true
  [[ -f "${dir}/README.md" && -f "${dir}/Pulumi.dev.yaml" ]] || fail "the clone in ${dir} is incomplete"
  ln -s "${E2E_REPO_ROOT}/node_modules" "${dir}/node_modules"
}

# qs_run LOG SCRIPT: SCRIPT in a new terminal of the user's (env -i, the env
# file of the previous steps), in the clone; its exports kept for the next.
qs_run() {
  local log="$1" script="$2" file="${E2E_WORK}/qs/${1}.sh"
  {
    printf 'set -euo pipefail\nsource %q\ncd %q\n' "${E2E_WORK}/qs/env" "${E2E_WORK}/qs/clone"
    printf '%s\n' "${script}"
    printf 'export -p >%q\n' "${E2E_WORK}/qs/env"
  } >"${file}"
  # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
  unshare -m --propagation private sh -c \
    'mount -t overlay qs-home -o "lowerdir=/root,upperdir=$1/upper,workdir=$1/work" /root && exec env -i bash "$2"' \
    qs-terminal "${E2E_WORK}/qs/root" "${file}" >"${E2E_LOG_DIR}/${log}.log" 2>&1
}

# qs_section_script TITLE: the section's commands, substituted (QS_SUBST),
# each echoed with its README line first (`+ README:LINE CMD`), so the log
# shows the step a failure came from.
qs_section_script() {
  local title="$1" line text
  while IFS=$'\t' read -r line text; do
    printf 'echo %q\n' "+ README:${line} ${text}"
    # The first block's last line reads the webhook URL typed without echo: the values instead.
    if [[ "${line}" == "${QS_FIRST_BLOCK}" && -z "${QS_VALUES_DONE:-}" && "${text}" == "read -rsp "*" WEBHOOK "* ]]; then
      QS_VALUES_DONE=1
      printf '%s\n' "${QS_VALUES}"
      continue
    fi
    if [[ -v "QS_SUBST[${text}]" ]]; then
      QS_USED["${text}"]=1
      text="${QS_SUBST[${text}]}"
      [[ -n "${text}" ]] || continue
    fi
    if [[ "${text}" == "pulumi preview "* && -z "${QS_SETTINGS_DONE:-}" ]]; then
      QS_SETTINGS_DONE=1
      printf '%s\n' "${QS_TEST_SETTINGS}"
    fi
    printf '%s\n' "${text}"
  done < <(python3 "${E2E_LIB_DIR}/readme_blocks.py" "${E2E_REPO_ROOT}/README.md" "${title}")
}

# qs_first_value NAME: NAME's value as the Quick start's first block sets it (`NAME=value`).
qs_first_value() {
  sed -n '/^## Quick start/,/^## /p' "${E2E_REPO_ROOT}/README.md" | grep -m1 -oE "\b$1=[^ ]+" | cut -d= -f2-
}

# qs_readme_quote SECTION REGEX: the first `code` span of SECTION matching REGEX.
qs_readme_quote() {
  # shellcheck disable=SC2016 # backquotes of Markdown, not of the shell
  sed -n "/^## $1/,/^## /p" "${E2E_REPO_ROOT}/README.md" | grep -oE '`[^`]+`' | tr -d '`' | grep -m1 -E -- "$2"
}

# qs_sample_regex LINE: the README's sample log line as an ERE: `...` is
# anything, every number any number, `alerts=` any value (the load decides).
qs_sample_regex() {
  python3 -c '
import re, sys
s = re.escape(sys.argv[1].strip())
s = s.replace(re.escape("..."), ".*")
s = re.sub(r"(alerts=)\S+", r"\1[^ ]+", s)
print(re.sub(r"[0-9]+", "[0-9]+([.][0-9]+)?", s))
' "$1"
}

qs_scenario() {
  local dir="${E2E_WORK}/qs" since script cron_cmd sample connectivity out key first mine vpc group instance group_before
  declare -gA QS_USED=()
  QS_SETTINGS_DONE="" QS_VALUES_DONE=""
  mkdir -p "${dir}"
  trap moto_stop EXIT
  moto_start
  read -r vpc group instance <<<"$(moto_ec2 setup-one)"
  group_before="$(moto_ec2 snapshot "${group}")"
  host_up "${QS_HOST}" "${QS_INDEX}"
  qs_prepare_host
  host_snapshot "${QS_HOST}" >"${dir}/before"
  qs_user_home "${dir}"
  qs_clone "${dir}/clone"
  # A new terminal: the machine's PATH and PULUMI_HOME (the engine of
  # tools/pulumi-env.sh, Node 22), HOME /root (qs_run's overlay), no backend, no passphrase.
  printf 'export PATH=%q HOME=/root PULUMI_HOME=%q LANG=C.UTF-8\n' "${PATH}" "${PULUMI_HOME}" >"${dir}/env"
  # The AWS credentials the user configured (here: moto's endpoint and dummy keys).
  printf 'export AWS_ENDPOINT_URL=%q AWS_ACCESS_KEY_ID=%q AWS_SECRET_ACCESS_KEY=%q AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null\n' \
    "${AWS_ENDPOINT_URL}" "${AWS_ACCESS_KEY_ID}" "${AWS_SECRET_ACCESS_KEY}" >>"${dir}/env"
  QS_FIRST_BLOCK="$(python3 "${E2E_LIB_DIR}/readme_blocks.py" "${E2E_REPO_ROOT}/README.md" "Quick start" | cut -f1 | sed -n 1p)"
  QS_VALUES="# The test's values (the receiver's URL only in this 0600 file and the stack's secret)
export HOST=$(host_addr "${QS_HOST}") INSTANCE=${instance} VPC=${vpc} GROUP=${group} AWS_REGION=${AWS_REGION}
WEBHOOK=$(printf '%q' "${E2E_URL1}")"
  QS_TEST_SETTINGS="# The test's settings (tests/e2e/lib/quickstart.sh: the receiver's CA, a far cron minute)
pulumi config set --stack \"\$STACK\" hostguard:notifyCaFile ${E2E_HOST_CA}
pulumi config set --stack \"\$STACK\" hostguard:cronMinute $(e2e_quiet_minute)
pulumi config set --stack \"\$STACK\" hostguard:notifyMaxTime 5
pulumi config set --stack \"\$STACK\" hostguard:notifyBudget 20"

  # In this shell (not a command substitution): it records what it used.
  qs_section_script "Quick start" >"${dir}/quickstart.body"
  script="$(<"${dir}/quickstart.body")"
  for key in "${!QS_SUBST[@]}"; do
    [[ -n "${QS_USED[${key}]:-}" ]] || fail "the substitution table names a line the Quick start no longer has: ${key}"
  done
  [[ -n "${QS_VALUES_DONE}" ]] || fail "the Quick start's first block does not end with read -rsp ... WEBHOOK"
  [[ -n "${QS_SETTINGS_DONE}" ]] || fail "the Quick start has no pulumi preview"
  since="$(date +%s.%N)"
  qs_run qs-quickstart "${script}" || { e2e_show_log qs-quickstart 60; fail "the Quick start failed at the step above"; }

  # Verify: each host's webhook command created without a warning, the chat message per host.
  out="$(qs_readme_quote Verify '^<host>-webhook$')" || fail "Verify names no <host>-webhook command"
  e2e_log_has qs-quickstart -E "^ \+ +command:remote:Command ${out/<host>/${QS_HOST}} created" "pulumi up did not create Verify's ${out}"
  if grep -q 'connectivity test was not delivered' "${E2E_LOG_DIR}/qs-quickstart.log"; then
    fail "pulumi up warned that the connectivity test was not delivered"
  fi
  e2e_log_has qs-quickstart -F "sudo ok" "step 4's sudo check did not print 'sudo ok'"
  connectivity="$(qs_readme_quote Verify '^Connectivity test from')" || fail "Verify quotes no connectivity message"
  e2e_wait_message "${since}" 20 "^url1	(.*\\n)?${connectivity/<host>/${QS_HOST}}" >/dev/null ||
    fail "the chat did not get Verify's '${connectivity}'"

  # The host monitor's run as cron runs it (Verify: "every 10 minutes"), then Verify's block
  # on the host. (Not the container monitor: no Docker engine runs here.)
  cron_cmd="$(host_exec "${QS_HOST}" sed -n 's/^[^#][^ ]* [^ ]* [^ ]* [^ ]* [^ ]* root \(.*host-monitor.*\)/\1/p' /etc/cron.d/hostguard)"
  [[ -n "${cron_cmd}" ]] || fail "no host-monitor line in /etc/cron.d/hostguard"
  host_exec "${QS_HOST}" sh -c "${cron_cmd}" ||
    fail "the cron command failed: ${cron_cmd}: $(host_exec "${QS_HOST}" tail -n 5 /var/log/hostguard/host-monitor.log)"
  # Verify's first block runs on the host (over the README's ssh, nothing of the terminal's
  # environment passed), the others in the terminal, as the README shows them.
  script="$(python3 "${E2E_LIB_DIR}/readme_blocks.py" "${E2E_REPO_ROOT}/README.md" Verify)"
  first="$(cut -f1 <<<"${script}" | sed -n 1p)"
  mine="$(awk -F'\t' -v first="${first}" '$1 != first { print $2 }' <<<"${script}")"
  [[ -n "${mine}" ]] || fail "Verify has no block for the user's machine after the host's"
  qs_run qs-verify "ssh -i ~/.ssh/hostguard_deploy \"\$SSH_USER@\$HOST\" \"bash -euo pipefail\" <<'VERIFY'
$(awk -F'\t' -v first="${first}" '$1 == first { print $2 }' <<<"${script}")
VERIFY
${mine}" || { e2e_show_log qs-verify 60; fail "Verify's blocks failed"; }
  sample="$(sed -n '/^## Verify/,/^## /p' "${E2E_REPO_ROOT}/README.md" | grep -m1 -E '^ *# [0-9]{4}-[0-9]{2}-[0-9]{2} ' | sed 's/^ *# //')" ||
    fail "Verify shows no sample log line"
  e2e_log_has qs-verify -E "^$(qs_sample_regex "${sample}")\$" "the monitor's log line is not as Verify shows it: ${sample}"
  e2e_log_has qs-verify -E '^403$' "GET https://HOST/.env did not answer 403 as Verify says"
  e2e_log_has qs-verify -F "Currently banned:" "fail2ban-client status shows no jail report"
  # "each host's installed files with their hashes": the installer's, as on the host.
  out="$(host_exec "${QS_HOST}" sha256sum /usr/local/lib/hostguard/install | cut -d' ' -f1)"
  e2e_log_has qs-verify -F "\"${QS_HOST}\":{\"files\":" "pulumi stack output does not list the host's files"
  e2e_log_has qs-verify -F "\"destination\":\"/usr/local/lib/hostguard/install\",\"part\":\"base\",\"path\":\"install\",\"sha256\":\"${out}\"" \
    "pulumi stack output does not show the installer with the hash it has on the host"

  # The adopt path: the host's own group holds exactly hostguard's rules.
  out="$(moto_ec2 wanted-for "$(qs_first_value PRIVATE_CIDR)" "$(qs_first_value ADMIN_CIDR)")"
  expect_eq "the adopted group's inbound rules after the Quick start" "$(moto_ec2 ingress "${group}")" "${out}"

  # Rotate: the runbook's block with run.sh's second receiver URL; its connectivity test arrives there.
  since="$(date +%s.%N)"
  qs_run qs-rotate "NEW_WEBHOOK=$(printf '%q' "${E2E_URL2}")
$(qs_section_script Rotate)" || { e2e_show_log qs-rotate 60; fail "the Rotate runbook's commands failed"; }
  e2e_wait_message "${since}" 20 "^url2	(.*\\n)?${connectivity/<host>/${QS_HOST}}" >/dev/null ||
    fail "the new webhook did not get Rotate's '${connectivity}'"

  # Uninstall: the host as before, but for the monitor's log, which the README says stays.
  qs_run qs-uninstall "$(qs_section_script Uninstall)" || { e2e_show_log qs-uninstall 60; fail "Uninstall's commands failed"; }
  [[ ! -e "${dir}/clone/Pulumi.dev.yaml" ]] || fail "Uninstall: stack rm kept Pulumi.dev.yaml, which the README says it deletes"
  host_exec "${QS_HOST}" test -s /var/log/hostguard/host-monitor.log || fail "Uninstall: the monitor's log did not stay"
  expect_eq "the adopted group after Uninstall" "$(moto_ec2 snapshot "${group}")" "${group_before}"
  out="$(diff <(grep -v '^/var/log/hostguard' "${dir}/before") <(host_snapshot "${QS_HOST}" | grep -v '^/var/log/hostguard'))" ||
    fail "after Uninstall the host differs from before the Quick start:
${out}"
  # The README's commands keep the webhook URLs out of every output they printed.
  out="$(grep -lF -e "${E2E_URL1}" -e "${E2E_URL2}" "${E2E_LOG_DIR}"/qs-*.log || true)"
  [[ -z "${out}" ]] || fail "a webhook URL is in the output of: ${out}"
  host_down "${QS_HOST}"
}
