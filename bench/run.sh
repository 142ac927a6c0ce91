#!/usr/bin/env bash
# The benchmark (`npm run bench`, issue 5): the cost of a monitor run, filter
# throughput, ban latency, deploy scaling and delivery under the chat
# service's rate limit, each against a reference measured in the same run. Prints a table and
# writes it, with a description of the machine, to bench/results.md.
#
#   bash bench/run.sh [--quick] [--only SECTION] [--out FILE]
#
# --quick uses small sizes (20,000 log lines, 1 and 10 containers, 1 ban
# trial per backend and through the proxy, 1 and 2 deployed hosts, 5
# messages) and writes bench/results-quick.md unless --out is given. --only
# runs one section (host, containers, filter, ban, proxyban, deploy, delivery, ban100, soak, escape, offsets, flood or nginx) and writes its table
# only to the --out FILE, if given; CI runs it so the benchmark cannot rot, without asserting
# timings. Exit status: 0 when every measurement ran and every correctness
# check held (a missed timing target is reported in the table, not an
# error), 1 otherwise. Needs root (network namespaces, fail2ban), strace,
# fail2ban, curl, nginx (the proxyban section, else its row says so), python3, jq, bc; the deploy section also the Pulumi engine
# of tools/pulumi-env.sh with the command plugin (else its rows say why it
# was not measured). Everything runs in a temp dir, on loopback or in
# namespaces made here; all is removed on exit.
set -euo pipefail
umask 077
export LC_ALL=C

BENCH_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BENCH_REPO
# shellcheck source=lib/common.bash
source "${BENCH_REPO}/bench/lib/common.bash"
# shellcheck source=lib/host.bash
source "${BENCH_REPO}/bench/lib/host.bash"
# shellcheck source=lib/containers.bash
source "${BENCH_REPO}/bench/lib/containers.bash"
# shellcheck source=lib/filter.bash
source "${BENCH_REPO}/bench/lib/filter.bash"
# shellcheck source=lib/ban.bash
source "${BENCH_REPO}/bench/lib/ban.bash"
# shellcheck source=lib/proxyban.bash
source "${BENCH_REPO}/bench/lib/proxyban.bash"
# shellcheck source=lib/deploy.bash
source "${BENCH_REPO}/bench/lib/deploy.bash"
# shellcheck source=lib/delivery.bash
source "${BENCH_REPO}/bench/lib/delivery.bash"
# shellcheck source=lib/alerts.bash
source "${BENCH_REPO}/bench/lib/alerts.bash"

# shellcheck source=lib/offsets.bash
source "${BENCH_REPO}/bench/lib/offsets.bash"
# shellcheck source=lib/flood.bash
source "${BENCH_REPO}/bench/lib/flood.bash"
# shellcheck source=lib/nginx.bash
source "${BENCH_REPO}/bench/lib/nginx.bash"

readonly BENCH_SECTIONS="host containers filter ban proxyban deploy delivery ban100 soak escape offsets flood nginx"

usage() {
  echo "usage: bash bench/run.sh [--quick] [--only SECTION] [--out FILE]" >&2
  echo "  SECTION: ${BENCH_SECTIONS// /, }" >&2
  exit 64
}

require_tools() {
  local tool
  for tool in strace fail2ban-regex curl python3 jq bc ip iptables top free; do
    command -v "${tool}" >/dev/null || { echo "bench: missing ${tool}" >&2; exit 1; }
  done
  ((EUID == 0)) || { echo "bench: needs root (network namespaces, fail2ban)" >&2; exit 1; }
}

version_of() {
  "$@" 2>&1 | head -n1 || true
}

machine() {
  local cpu
  cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
  printf -- '- date: %(%Y-%m-%d %H:%M:%S %z)T\n' -1
  printf -- '- CPUs (nproc): %s; CPU model: %s\n' "$(nproc)" "${cpu:-unknown}"
  printf -- '- kernel: %s\n' "$(uname -srm)"
  printf -- '- bash: %s\n' "${BASH_VERSION}"
  printf -- '- fail2ban: %s; python3-pyinotify: %s\n' "$(version_of fail2ban-server --version)" \
    "$(dpkg-query -W -f='${Version}' python3-pyinotify 2>/dev/null || echo 'not installed')"
  printf -- '- curl: %s\n' "$(version_of curl --version)"
  printf -- '- procps: %s; strace: %s\n' "$(version_of ps --version)" "$(version_of strace -V)"
}

report() {
  local mode="$1"
  printf '# hostguard benchmark results (%s run)\n\n' "${mode}"
  local command='npm run bench'
  [[ "${mode}" == quick ]] && command+=' -- --quick'
  printf 'Written by %s (bench/run.sh). Every ratio is against a\n' "\`${command}\`"
  printf 'reference measured in the same run on the same machine; absolute values are\n'
  printf 'for context only (they vary from run to run).\n\n'
  printf '## Machine\n\n'
  machine
  printf '\n## Results\n\n'
  bench_table
  printf '\n## How each figure is taken\n\n'
  cat <<'EOF'
- **1 host monitor**: `scripts/host-monitor` in a temp `HOSTGUARD_ROOT` with all thresholds at 100 (nothing fires, spool empty), after one warm-up run (the CPU sample of the previous run exists, as under cron). Spawns: successful `execve` of every process but the first under `strace -f` (the first one's execs are `env` starting bash); forks in brackets. Reference: `bench/reference/host-monitor` (one `top -bn1`, `free -m`, `df`, `uptime`, `uptime -p`, `ps aux | wc -l`, `hostname`, `date`, with grep/awk/sed/bc as the SPEC's script). Wall time: median of alternated runs; target 0 processes exec'd and at most 60 ms per quiet run (issue 31).
- **2 container monitor**: `scripts/container-monitor` with `test/helpers/fake-docker` as `docker`, its `stats` sleeping 2 s per call (as the real engine samples); N running, quiet containers. Calls: lines of the fake's calls log for one run. Reference: `bench/reference/container-monitor` (one `ps`, then per container one `inspect` and one `stats --no-stream`). The unit of the target is one `stats --no-stream` call of one container.
- **3 filter**: `bench/lib/gen-access-log.py` writes a seeded combined-format log (IPv4 and 20 % IPv6, GET/POST/HEAD/..., 200/3xx/404/400/403/5xx, TLS junk on the plain port, long user agents, a few Basic-auth users). `fail2ban-regex LOG FILTER` with `scripts/fail2ban/filter.d/nginx-bad-request.local` and with the packaged `/etc/fail2ban/filter.d/nginx-bad-request.conf`, each alone in a folder, alternated; lines/s over the whole process (start-up included). Match counts are checked against the generator's own counts.
- **4 ban latency**: a real fail2ban in a network namespace (`test/helpers/fail2ban-sandbox.bash`) with the project's jail, filter and action, and the HTTPS receiver in the same namespace. Per trial, a fresh IP, 9 matching lines, wait until fail2ban counted 9, wait 1.2 s (the notifier paces posts 1.05 s apart), then from writing the 10th line: (a) until `iptables -S` in the namespace shows the REJECT rule (polled every 20 ms, so up to ~20 ms late), (b) until the receiver recorded the ban message (its own timestamp). Backend `auto` (the jail's setting: pyinotify when python3-pyinotify is installed) and `polling` (forced by a later jail.d file).
- **4b ban latency through the proxy** (issue 25): the setup of `test/payload/proxy-ban.bats` in one network namespace: a second real nginx as the load balancer (adds X-Forwarded-For, connects from its own address) in front of the server's nginx, which reads the realip drop-in and the deny snippet placed by `install --part web` from the payload rendered with `trustedProxies`; the fail2ban sandbox of row 4 with the project's jail, filter, chat action, `hostguard-nginx-ban` action and `iptables-multiport`; the receiver in the namespace. Per trial, a fresh scanner address: 9 denied requests through the proxy, wait until fail2ban counted 9, wait 1.2 s, then from sending the 10th: until a request of the scanner through the proxy gets 403 from nginx (each poll: `iptables -S`, then one request with a 1 s cap, then 20 ms; the time is taken when the answer is in, so up to one poll late) and, the reference in the same trials, until the REJECT rule for that address is in the namespace's `iptables -S` (row 4's measure); at most 15 s. Checked: the ban reaches nginx, another client through the proxy still gets 200, the proxy is never banned.
- **4c nginx reloads for a burst of bans** (issue 43): in row 4b's setup, after its trials, one `fail2ban-client set JAIL banip` of 100, then of 500 fresh addresses; timed until every one is in nginx's ban list (polled every 20 ms), then 2.5 s more so that the last pass's reload is logged; the reloads are the `SIGHUP` lines nginx's error log gained. Target: at most one per 2 s of burst, plus the first (the writer thread applies the whole banned set at most once per 2 s). Before issue 43, every 0.2 s of a burst was a reload (500 bans: 31-49).
- **5 deploy**: the real Pulumi engine (`tools/pulumi-env.sh`: the cached CLI, Node.js language host and command plugin) deploys the repository's own program (a temp copy, `file://` backend, `hostguard:aws false`; `test/e2e/lib/stack.sh`) to fresh disposable hosts (`test/e2e/lib/hosts.sh`: network namespaces with their own sshd, nginx, fail2ban, cron), one stack per fleet size, with the HTTPS receiver in the hosts' lan. The hosts come up in parallel, the stack is configured and an untimed `pulumi preview` warms the caches (TypeScript, plugins; it opens no SSH session) before timing starts. Timed: `pulumi up --yes --skip-preview` (first, every part installed), then the same again (no-op); `--parallel` is left at the CLI's default (printed in the engine row). SSH sessions: `Accepted publickey` lines added to each host's journal (`host_sshd_log`: the hosts' sshd logs there, as on Debian 12), summed over the fleet; the no-op `up` must add none and change no resource. The first `up` of 1 host is the reference of the fleet rows; the first `up` of the same fleet is the reference of each no-op row. Each first `up` must bring one "jail has started" message per host. Without the engine or the command plugin the rows say "not measured" and why.
- **7 ban 100**: the fail2ban sandbox of row 4 (findtime 10m), fresh per trial; 9 lines for each of N attackers (distinct addresses), wait until fail2ban counted them all, switch the receiver's mode (hang: it reads each request and never answers), then the N 10th lines in one write; timed until every REJECT rule is in the namespace's `iptables -S` (polled every 50 ms), capped at 20 s. The project's action (a fail2ban Python action: one spool transaction per message, one detached flush while the delivery lock is free) with the webhook hung and healthy; the floor is fail2ban and the firewall alone (a command action `slack-notify` with empty commands), and every chat command `true` shows the least any command action costs above it (fail2ban starts a shell per command); the reference is `bench/reference/slack-notify-curl.conf`, the common community action posting synchronously with curl from the action line, healthy and hung. The floor, `true` and hostguard-hung figures are each the median of 3 trials taken in turn (1 in quick mode): one trial of the floor varied 637-728 ms between runs. With the webhook refused as well (the receiver answers 403 invalid_token from the burst on): the notifier is a wrapper that counts every process the action starts (`notifier.starts`), and each of the hung and refused rows says how many flush processes the burst started. Target: all N within 5 s hung and within 1.5x of the healthy figure, within 1.15x of the floor hung and refused alike (issue 31), and at most one flush process per burst, 0 per ban (issue 43: 483 for 500 refused bans before).
- **8 fault soak** (issues 18, 34), Slack's with N messages, then once per chat format of another classifier (Mattermost, Teams, Google Chat, Discord, the generic webhook, each against its receiver flavour, with half as many messages, at most 100: Discord's 2 s pace makes a longer one long; PagerDuty gets no notice, Rocket.Chat's 429 waits 60 s): N messages spooled (the 7th and every 97th hold PERMANENT, which the receiver refuses with 400 invalid_payload), then `hostguard-notify flush` runs until the spool is empty (NOTIFY_MAX_TIME 3, ATTEMPTS 3, BUDGET 40) against the receiver's `chaos 8` mode (seeded: 10 % 500, 5 % 429 with Retry-After 1 or the flavour's own 429, 5 % a reset before the answer, 2 % a 30 s hang, the rest accepted). Checked on what the receiver recorded and the dead letters: every message delivered exactly once and in order, or dead-lettered with `HTTP 400 invalid_payload`. Floor: one second per message.
- **9 escaping**: the host agent's request of one message in each of the 8 chat formats (`formats.request`: Python's json and urllib.parse; Slack's form-encoded `payload=` field, Teams' card cut to its byte limit, ...), on a 1 KiB and a 64 KiB text (ASCII with quotes, backslashes, newlines, tabs, UTF-8 and one control character), median of the runs, in one Python process; the reference is the time per KiB of the 1 KiB text.
- **10 fleet offsets**: `bench/lib/offsets.ts` runs the real `scripts/at-offset.sh` for fleets of 100 random EC2 instance ids (cloud-init's instance-id file in a private mount namespace, a stand-in `sleep` printing the seconds asked for): the second of the 10-minute interval at which each host's monitors post, derived on the host (every host gets the same bundle). Per fleet, the largest number of hosts posting in the same second; median and worst over the fleets. Reference: the 0-9 minute draw of earlier versions, where every host of a minute posts on its second 0. Checked: every offset is 0-599.
- **11 ban flood** (issues 18, 34), once per chat format of a distinct text limit and classifier (Slack, Discord, Google Chat, Teams, each against its receiver flavour; PagerDuty gets no ban notice): N ban-tool messages (the texts of `event ban`) spooled in the ban tool's queue with the receiver down, then one host-monitor disk alert; the receiver back in `pace 1` mode, `hostguard-notify flush` until the spool is empty (at most 60 runs). Checked: the alert is the first message the receiver recorded, and every ban arrives once, in order (bursts go merged). Measured: from the receiver's return to the alert's arrival; the reference is one FIFO queue (earlier versions) at 1 message/s: N seconds.
- **12 web install** (issues 18, 23): `install install --part web` from a rendered payload into a temp root (what a deploy runs on the host; no service touched): the users' files read, edited and written back by `hostguard/install/webedit.py` (nginx's lexer and the splice of `nginxconf.py`, the final document `properties.py` appends), on a generated site file of 1 MiB (the same 13-line server block repeated: comments, quoted strings and words holding `{` `}` `;`, locations, a quoted regex) with a properties file of 3.8 MiB of key lines (read whole; the document appended after them), against a 10 KiB site file and a 10 KiB properties file in the same run; median of the runs. Checked: every server block and location gets the include, the properties file ends with the document, and uninstall gives back every byte of both. Linear: the ratio is at most the size ratio (~100x); the interpreter's start and the part's own files are a fixed cost. Before issue 23 the properties edit was quadratic (63 KB: 11.8 s; 3.9 MB: killed after 300 s) and the row timed the awk scan alone (1 MiB: 0.90 s).
- **12b deny rule, merge_slashes off** (issue 43): the deny snippet in a real nginx (`test/helpers/nginx-sandbox.bash`, its RAW site: `merge_slashes off`, so `$uri` keeps every slash); 200 GETs of `/.env` + 4000 slashes + `x` (not denied: 404), against 200 GETs of a path as long (`/a` 2000 times, then `/x`: 404 too), each batch one curl over one kept-alive connection. Target: at most 3x. Before issue 43 the rule backtracked exponentially on such a path: nginx's PCRE gave up at its match limit (0.33 s of a worker) and answered 500, which the jail does not count.
- **6 delivery**: the HTTPS receiver in `pace 1` mode (one message per second, 429 with `Retry-After: 1` beyond). The messages are spooled as the agent spools them (`bench/lib/spool.py`, the agent's own spool module), then `hostguard-notify flush` runs until the spool is empty (at most 10 runs, each with the production budget of 40 s). Exactly-once and order are checked on what the receiver recorded. Floor: one second per message.
EOF
}

main() {
  local quick=0 out="" only=""
  while (($#)); do
    case "$1" in
      --quick) quick=1; shift ;;
      --only)
        (($# >= 2)) || usage
        [[ " ${BENCH_SECTIONS} " == *" $2 "* ]] || usage
        only="$2"
        shift 2
        ;;
      --out) (($# >= 2)) || usage; out="$2"; shift 2 ;;
      *) usage ;;
    esac
  done
  require_tools
  local mode=full
  ((quick)) && mode=quick
  if [[ -z "${out}" && -z "${only}" ]]; then
    out="${BENCH_REPO}/bench/results.md"
    ((quick)) && out="${BENCH_REPO}/bench/results-quick.md"
  fi

  local work
  work="$(mktemp -d /tmp/hostguard-bench.XXXXXX)"
  # The helpers of the bats suite keep their files under this name.
  export BATS_TEST_TMPDIR="${work}"
  # shellcheck disable=SC2064 # the path is fixed now
  trap "bench_on_exit; rm -rf -- '${work}'" EXIT
  trap 'exit 130' INT TERM

  # Section, then its arguments in full and in quick mode.
  local -a plan=(
    "host|41|5"
    "containers|3 1 10 50|1 1 10"
    "filter|200000 5|20000 1"
    "ban|5|1"
    "proxyban|5|1"
    "deploy|1 4 8|1 2"
    "delivery|30|5"
    "ban100|100 3|10 1"
    "soak|1000|30"
    "escape|21|5"
    "offsets|100 10|100 2"
    "flood|1000|100"
    "nginx|1048576 10240 5|1048576 10240 1"
  )
  local step section full small
  local -a args
  for step in "${plan[@]}"; do
    IFS='|' read -r section full small <<<"${step}"
    [[ -z "${only}" || "${only}" == "${section}" ]] || continue
    read -ra args <<<"${full}"
    ((quick)) && read -ra args <<<"${small}"
    "bench_${section}" "${work}" "${args[@]}"
  done

  [[ -z "${out}" ]] || report "${mode}" >"${out}"
  echo
  bench_table
  echo
  [[ -z "${out}" ]] || echo "written: ${out#"${BENCH_REPO}/"}"
  if ((BENCH_ERRORS > 0)); then
    echo "bench: ${BENCH_ERRORS} correctness check(s) failed (see above)" >&2
    return 1
  fi
}

main "$@"
