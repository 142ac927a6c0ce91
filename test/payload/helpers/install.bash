# shellcheck shell=bash
# Helpers for the installer tests: a payload folder, a temp root and listings
# of a tree precise enough to prove "nothing changed".

HG_REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"

# shellcheck source=../../helpers/render-payload.bash
source "${HG_REPO}/test/helpers/render-payload.bash"

# Renders the payload a deploy ships into $PAYLOAD (see render_payload), for
# the stack-config settings given (settingKey=value, --cron-minute N).
hg_make_payload() {
  PAYLOAD="${BATS_TEST_TMPDIR}/payload"
  render_payload "${PAYLOAD}" "$@"
  hg_runtime_on_path
}

# Installing the monitors part needs the container runtime (docker by
# default) on PATH (hostguard/install/programs.py), and this machine may have none: the
# installer tests find the test stand-in (test/helpers/fake-docker) first.
# They only need it to be there; container-monitor.bats drives it.
hg_runtime_on_path() {
  local dir="${BATS_TEST_TMPDIR}/runtime-bin"
  mkdir -p "${dir}"
  ln -sfn "${HG_REPO}/test/helpers/fake-docker" "${dir}/docker"
  [[ ":${PATH}:" == *":${dir}:"* ]] || PATH="${dir}:${PATH}"
}

# Makes $PATH_WITHOUT a directory of links to every program of this
# machine's usual PATH except the ones named (and the stand-in runtime,
# unless docker is named): PATH="${PATH_WITHOUT}" is a host without them.
hg_path_without() {
  local dir name
  PATH_WITHOUT="${BATS_TEST_TMPDIR}/path-without"
  rm -rf "${PATH_WITHOUT}"
  mkdir -p "${PATH_WITHOUT}"
  # Lowest priority first: a later directory's program replaces the link.
  for dir in /bin /sbin /usr/bin /usr/sbin /usr/local/bin /usr/local/sbin "${BATS_TEST_TMPDIR}/runtime-bin"; do
    [[ -d "${dir}" ]] || continue
    find "${dir}" -maxdepth 1 -mindepth 1 \( -type f -o -type l \) -exec ln -sfn -t "${PATH_WITHOUT}" {} +
  done
  for name in "$@"; do
    rm -f "${PATH_WITHOUT:?}/${name}"
  done
}

hg_make_root() {
  ROOT="${BATS_TEST_TMPDIR}/root"
  rm -rf "${ROOT}"
  mkdir -m 0755 "${ROOT}" "${ROOT}/run"
}

# One line per path (type, mode, owner, size of files, link target, and with
# "mtime" the modification time in ns), then the sha256 of every file.
# Directory sizes are left out: they depend on the filesystem's history.
# /run is left out: the install lock lives there (a tmpfs on a host).
# The transaction store is listed by its records (hg_store_records), not its
# bytes: its pages and write-ahead log depend on the order of the writes and
# on whether a killed run left a log for the next to replay.
hg_listing() {
  local root="$1" with_mtime="${2:-}" format='%p|%y|%m|%u|%g|%s|%l' db='./var/lib/hostguard/install.db'
  [[ -z "${with_mtime}" ]] || format+='|%T@'
  (
    cd "${root}" || exit 1
    find . -path ./run -prune -o \( -path "${db}-wal" -o -path "${db}-shm" \) -o -printf "${format}\n" \
      | awk -F'|' -v db="${db}" 'BEGIN { OFS = "|" } $2 == "d" || $1 == db { $6 = "-" } $1 == db && NF > 7 { $8 = "-" } { print }' \
      | LC_ALL=C sort
    find . -path ./run -prune -o -path "${db}*" -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    if [[ -f "${db}" ]]; then
      hg_store_records . | sed 's/^/record|/'
    fi
  )
}

# The manifests in ROOT's transaction store (scripts/hostguard/install/txnstore.py),
# part by part, each in its order, without row ids: one record a line. Read
# from a copy: opening the store in place would create its write-ahead log
# and change the state directory that listings compare.
hg_store_records() {
  local copy
  copy="$(mktemp -d)"
  cp -p "$1"/var/lib/hostguard/install.db* "${copy}/"
  python3 -c 'import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute("SELECT part, kind, path, a, b FROM record ORDER BY part, id"):
    print("|".join(row))' "${copy}/install.db"
  rm -rf "${copy}"
}

# Fails with both listings' diff when they differ.
hg_assert_same_listing() {
  local before="$1" after="$2"
  if ! diff -u "${before}" "${after}" >"${BATS_TEST_TMPDIR}/listing.diff"; then
    echo "listings differ:" >&2
    cat "${BATS_TEST_TMPDIR}/listing.diff" >&2
    return 1
  fi
}

# The test's accounts, as a real host has them for its app users: copies of
# this machine's /etc/passwd and /etc/group with each "name:uid" user added
# (primary group: a group of its own, same id) and each "+group:gid:members"
# group. hg_install (and hg_with_accounts) bind-mount them over /etc/passwd
# and /etc/group in a private mount namespace: this machine's own files are
# never touched.
hg_accounts() {
  local spec name id
  HG_ACCOUNTS_DIR="${BATS_TEST_TMPDIR}/accounts"
  mkdir -p "${HG_ACCOUNTS_DIR}"
  cp /etc/passwd "${HG_ACCOUNTS_DIR}/passwd"
  cp /etc/group "${HG_ACCOUNTS_DIR}/group"
  for spec in "$@"; do
    if [[ "${spec}" == +* ]]; then
      printf '%s\n' "${spec#+}" | sed 's/^\([^:]*\):\([0-9]*\):/\1:x:\2:/' >>"${HG_ACCOUNTS_DIR}/group"
      continue
    fi
    name="${spec%%:*}"
    id="${spec#*:}"
    printf '%s:x:%s:%s::/nonexistent:/usr/sbin/nologin\n' "${name}" "${id}" "${id}" >>"${HG_ACCOUNTS_DIR}/passwd"
    printf '%s:x:%s:\n' "${name}" "${id}" >>"${HG_ACCOUNTS_DIR}/group"
  done
  chmod 0644 "${HG_ACCOUNTS_DIR}/passwd" "${HG_ACCOUNTS_DIR}/group"
}

# Runs COMMAND... with the accounts of hg_accounts (as is without them).
hg_with_accounts() {
  if [[ -z "${HG_ACCOUNTS_DIR:-}" ]]; then
    "$@"
    return
  fi
  # shellcheck disable=SC2016 # the inner sh expands $1 and $@, not this shell
  unshare --mount --propagation private sh -c \
    'mount --bind "$1/passwd" /etc/passwd && mount --bind "$1/group" /etc/group && shift && exec "$@"' \
    _ "${HG_ACCOUNTS_DIR}" "$@"
}

# Runs the payload's installer in $ROOT.
hg_install() {
  hg_with_accounts "${PAYLOAD}/install" "$1" --root "${ROOT}" "${@:2}"
}

hg_assert_mode_owner() {
  local path="$1" want="$2" got
  got="$(stat -c '%a %U:%G' -- "${path}")"
  if [[ "${got}" != "${want}" ]]; then
    echo "${path}: got ${got}, want ${want}" >&2
    return 1
  fi
}

# Makes, once, the copies a root-/ sandbox mounts in DIR: /etc/nginx (a
# copy of this machine's), and empty /var/lib, /var/log/nginx and /run.
hg_root_sandbox_make() {
  local dir="$1"
  [[ ! -d "${dir}" ]] || return 0
  mkdir -p "${dir}/varlib/nginx" "${dir}/lognginx" "${dir}/run"
  cp -a /etc/nginx "${dir}/etc-nginx"
}

# Runs CMD... with root / in private mount, network and pid namespaces whose
# /etc/nginx, /var/lib, /var/log/nginx and /run are DIR's copies: the real
# nginx and install run against them, this machine's own are untouched.
hg_root_sandbox() {
  local dir="$1"
  shift
  # shellcheck disable=SC2016 # the inner bash expands its own arguments
  timeout 120 unshare --mount --propagation private --net --pid --fork bash -euo pipefail -c '
    s="$1"
    shift
    mount --bind "${s}/etc-nginx" /etc/nginx
    mount --bind "${s}/varlib" /var/lib
    mount --bind "${s}/lognginx" /var/log/nginx
    mount --bind "${s}/run" /run
    ip link set lo up
    "$@"' _ "${dir}" "$@"
}

# Takes the listing (mtimes included) that hg_assert_refused compares with.
hg_listing_before() {
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
}

# Runs `install ARGS...` (hg_install), which must fail with TEXT in its
# output and leave the root exactly as hg_listing_before saw it, mtimes
# included: refused before anything was written.
# shellcheck disable=SC2154 # output and status are set by bats' run
hg_assert_refused() {
  local text="$1"
  shift
  run hg_install "$@"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "${text}"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

hg_assert_contains() {
  local haystack="$1" needle="$2"
  if [[ "${haystack}" != *"${needle}"* ]]; then
    printf 'expected to find: %s\nin:\n%s\n' "${needle}" "${haystack}" >&2
    return 1
  fi
}

hg_assert_not_contains() {
  local haystack="$1" needle="$2"
  if [[ "${haystack}" == *"${needle}"* ]]; then
    printf 'did not expect: %s\nin:\n%s\n' "${needle}" "${haystack}" >&2
    return 1
  fi
}
