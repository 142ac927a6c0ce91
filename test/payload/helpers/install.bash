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
# default) on PATH (lib/programs.sh), and this machine may have none: the
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
  mkdir -m 0755 "${ROOT}"
}

# One line per path (type, mode, owner, size of files, link target, and with
# "mtime" the modification time in ns), then the sha256 of every file.
# Directory sizes are left out: they depend on the filesystem's history.
hg_listing() {
  local root="$1" with_mtime="${2:-}" format='%p|%y|%m|%u|%g|%s|%l'
  [[ -z "${with_mtime}" ]] || format+='|%T@'
  (
    cd "${root}" || exit 1
    find . -printf "${format}\n" \
      | awk -F'|' 'BEGIN { OFS = "|" } $2 == "d" { $6 = "-" } { print }' \
      | LC_ALL=C sort
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
  )
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

# Runs the payload's installer in $ROOT.
hg_install() {
  "${PAYLOAD}/install" "$1" --root "${ROOT}" "${@:2}"
}

hg_assert_mode_owner() {
  local path="$1" want="$2" got
  got="$(stat -c '%a %U:%G' -- "${path}")"
  if [[ "${got}" != "${want}" ]]; then
    echo "${path}: got ${got}, want ${want}" >&2
    return 1
  fi
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
