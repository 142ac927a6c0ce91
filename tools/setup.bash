# shellcheck shell=bash
# What this repository needs on a machine, listed once, and the functions that
# install what is missing of it. Sourced by the README's two commands
# (test/run-all.sh for `npm test`, test/e2e/demo.sh for `npm run demo`) and by
# .ci/run. Each function first checks and does nothing when its piece is
# there, so a second run installs and rebuilds nothing. Needs root only when
# something must be installed with apt-get.
#
#   hg_setup_debian_packages   HG_DEBIAN_PACKAGES that dpkg does not list as installed
#   hg_setup_npm_packages      npm ci (root and policy/) when the lock file changed since the last one
#   hg_setup_actionlint        go install actionlint when it is not in Go's bin directory
#   hg_setup_engine            tools/build-pulumi.sh (the Pulumi engine and its plugins)
#   hg_setup_moto              moto's EC2 emulator (PyPI moto[server]) in a venv, when not there
#   hg_setup_pytools           the host agent's test tools (pytest, hypothesis, mypy, ruff) in a venv,
#                              plus pytest venvs for the other supported Pythons found under pyenv
#   hg_setup_spring_app        the Spring Boot application test/payload/spring-boot.bats runs
#                              (test/helpers/spring-app, Maven Central), built when its sources changed
#   hg_setup_for_tests / hg_setup_for_demo   the pieces each command needs, in order
#   hg_tool_path                 the PATH to run with afterwards (Node 22 and Go's bin first)

HG_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly HG_REPO_ROOT
# Everything the tests and the demo run from Debian: bash tooling, the
# programs the payload drives (fail2ban, nginx, cron, logrotate, curl) and what
# the sandboxes and disposable hosts are made of (namespaces, nftables, sshd).
readonly HG_DEBIAN_PACKAGES=(
  bats shellcheck curl openssl ca-certificates jq python3 python3-venv strace procps util-linux
  iproute2 nftables iptables fail2ban python3-pyinotify python3-systemd nginx-light libnginx-mod-stream
  cron logrotate openssh-server openssh-client sudo openjdk-17-jdk-headless maven mmdebstrap
)
readonly HG_ACTIONLINT_VERSION=v1.7.7
# The EC2 emulator the security group tests run against (test/aws/), pinned:
# its own venv, never the machine's Python packages.
readonly HG_MOTO_VERSION=5.2.5
HG_MOTO_VENV="${HOSTGUARD_MOTO_VENV:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/moto-venv}"
readonly HG_MOTO_VENV
# The host agent's test tools (never on a host: the agent is standard library
# only), pinned, in a venv of Debian's python3 (the hosts' interpreter); and,
# for the other Pythons the agent supports (3.9, 3.12, and 3.13: Debian 13's) where pyenv has them,
# a venv each with pytest and hypothesis, so the unit tests run there too.
readonly HG_PYTOOLS=(pytest==8.3.4 hypothesis==6.122.3 mypy==1.13.0 ruff==0.8.4)
HG_PYTOOLS_DIR="${HOSTGUARD_PYTOOLS_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/py}"
readonly HG_PYTOOLS_DIR
readonly HG_PY_OTHER_VERSIONS=(3.9 3.12 3.13)
# The Spring Boot application that decides what Spring reads (spring-boot.bats):
# built from test/helpers/spring-app with Debian's JDK 17 and Maven, its jar
# and Maven's local repository kept here; rebuilt only when its sources change.
HG_SPRING_APP_DIR="${HOSTGUARD_SPRING_APP_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/spring-app}"
readonly HG_SPRING_APP_DIR
# Written into node_modules after a successful npm ci: the lock file it installed.
readonly HG_NPM_STAMP=.hostguard-lock.sha256

hg_setup_log() {
  printf '== %s\n' "$*" >&2
}

hg_go() {
  if command -v go >/dev/null 2>&1; then
    command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then
    printf '%s\n' /usr/local/go/bin/go
  else
    echo "install: no Go toolchain (go on PATH or /usr/local/go/bin/go) to build actionlint and the Pulumi engine" >&2
    return 1
  fi
}

hg_missing_debian_packages() {
  local package
  for package in "${HG_DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q 'install ok installed' ||
      printf '%s\n' "${package}"
  done
}

hg_setup_debian_packages() {
  local -a missing
  mapfile -t missing < <(hg_missing_debian_packages)
  ((${#missing[@]} > 0)) || return 0
  if ((EUID != 0)); then
    echo "install: Debian packages missing and not root to install them: ${missing[*]}" >&2
    return 1
  fi
  hg_setup_log "Debian packages: ${missing[*]}"
  # Packages must not start their services on this machine: tests and the
  # demo start their own, in sandboxes. The policy file is removed again.
  local policy=/usr/sbin/policy-rc.d created_policy=0 rc=0
  if [[ ! -e "${policy}" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"${policy}"
    chmod 0755 "${policy}"
    created_policy=1
  fi
  {
    apt-get -o DPkg::Lock::Timeout=600 update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends "${missing[@]}"
  } || rc=$?
  ((created_policy == 0)) || rm -f "${policy}"
  return "${rc}"
}

# hg_npm_ci DIR: npm ci in DIR unless its node_modules was installed from
# this very lock file; the stamp is written only after npm ci succeeded.
hg_npm_ci() {
  local dir="$1" want
  want="$(cat "${dir}/package.json" "${dir}/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [[ "$(cat "${dir}/node_modules/${HG_NPM_STAMP}" 2>/dev/null)" == "${want}" ]]; then
    return 0
  fi
  hg_setup_log "npm ci in ${dir} (Node 22 comes as the npm package node)"
  (cd "${dir}" && npm ci --no-audit --no-fund)
  printf '%s\n' "${want}" >"${dir}/node_modules/${HG_NPM_STAMP}"
}

hg_setup_npm_packages() {
  hg_npm_ci "${HG_REPO_ROOT}"
  hg_npm_ci "${HG_REPO_ROOT}/policy"
}

hg_setup_actionlint() {
  local go gobin
  go="$(hg_go)" || return 1
  gobin="$("${go}" env GOPATH)/bin"
  [[ -x "${gobin}/actionlint" ]] && return 0
  hg_setup_log "actionlint ${HG_ACTIONLINT_VERSION} (go install)"
  "${go}" install "github.com/rhysd/actionlint/cmd/actionlint@${HG_ACTIONLINT_VERSION}"
}

# Needs Go only when no real pulumi CLI is on PATH (build-pulumi.sh finds it).
hg_setup_engine() {
  "${HG_REPO_ROOT}/tools/build-pulumi.sh"
}

# hg_moto_installed: the venv's moto_server runs and is HG_MOTO_VERSION.
hg_moto_installed() {
  [[ -x "${HG_MOTO_VENV}/bin/moto_server" ]] &&
    [[ "$("${HG_MOTO_VENV}/bin/python" -c 'import importlib.metadata as m; print(m.version("moto"))' 2>/dev/null)" == "${HG_MOTO_VERSION}" ]]
}

hg_setup_moto() {
  hg_moto_installed && return 0
  hg_setup_log "moto[server]==${HG_MOTO_VERSION} in ${HG_MOTO_VENV}"
  /usr/bin/python3 -m venv "${HG_MOTO_VENV}"
  "${HG_MOTO_VENV}/bin/pip" install --quiet --disable-pip-version-check "moto[server]==${HG_MOTO_VERSION}"
  hg_moto_installed || {
    echo "install: moto ${HG_MOTO_VERSION} is not in ${HG_MOTO_VENV} after pip install" >&2
    return 1
  }
}

# hg_pyvenv DIR PYTHON PACKAGE...: a venv at DIR of PYTHON holding exactly
# these pinned packages (a stamp of the list, written after pip succeeded).
hg_pyvenv() {
  local dir="$1" python="$2" want
  shift 2
  want="$("${python}" --version 2>&1) $*"
  [[ "$(cat "${dir}/.hostguard-stamp" 2>/dev/null)" == "${want}" ]] && return 0
  hg_setup_log "python venv ${dir}: $*"
  rm -rf -- "${dir}"
  "${python}" -m venv "${dir}"
  "${dir}/bin/pip" install --quiet --disable-pip-version-check "$@"
  printf '%s\n' "${want}" >"${dir}/.hostguard-stamp"
}

# The other supported Pythons pyenv has here (newest patch release of each).
hg_other_pythons() {
  local version found
  for version in "${HG_PY_OTHER_VERSIONS[@]}"; do
    found="$(compgen -G "${HOME}/.pyenv/versions/${version}.*/bin/python${version}" | sort -V | tail -n1)" || true
    [[ -z "${found}" ]] || printf '%s %s\n' "${version}" "${found}"
  done
}

hg_setup_pytools() {
  local version python
  hg_pyvenv "${HG_PYTOOLS_DIR}/tools" /usr/bin/python3 "${HG_PYTOOLS[@]}"
  while read -r version python; do
    hg_pyvenv "${HG_PYTOOLS_DIR}/py${version}" "${python}" "${HG_PYTOOLS[0]}" "${HG_PYTOOLS[1]}"
  done < <(hg_other_pythons)
}

# The sources' hash: the stamp of a build of them.
hg_spring_app_sum() {
  (cd "${HG_REPO_ROOT}/test/helpers/spring-app" && find pom.xml src -type f -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

hg_setup_spring_app() {
  local want build
  want="$(hg_spring_app_sum)"
  [[ -f "${HG_SPRING_APP_DIR}/spring-check.jar" && "$(cat "${HG_SPRING_APP_DIR}/stamp" 2>/dev/null)" == "${want}" ]] &&
    return 0
  hg_setup_log "Spring Boot test application (mvn package) in ${HG_SPRING_APP_DIR}"
  build="${HG_SPRING_APP_DIR}/build"
  rm -rf -- "${build}" "${HG_SPRING_APP_DIR}/stamp"
  mkdir -p "${build}"
  cp -R "${HG_REPO_ROOT}/test/helpers/spring-app/pom.xml" "${HG_REPO_ROOT}/test/helpers/spring-app/src" "${build}/"
  (cd "${build}" && mvn -B -q -Dstyle.color=never -Dmaven.repo.local="${HG_SPRING_APP_DIR}/m2" -DskipTests package)
  cp "${build}/target/spring-check.jar" "${HG_SPRING_APP_DIR}/spring-check.jar"
  rm -rf -- "${build}"
  printf '%s\n' "${want}" >"${HG_SPRING_APP_DIR}/stamp"
}

hg_setup_for_tests() {
  hg_setup_debian_packages
  hg_setup_npm_packages
  hg_setup_actionlint
  hg_setup_moto
  hg_setup_pytools
  hg_setup_spring_app
}

hg_setup_for_demo() {
  hg_setup_debian_packages
  hg_setup_npm_packages
  hg_setup_engine
}

# The repository's Node 22 and Go's bin directory (actionlint) first.
hg_tool_path() {
  local go gobin=""
  if go="$(hg_go 2>/dev/null)"; then
    gobin="$("${go}" env GOPATH)/bin:$(dirname "${go}"):"
  fi
  printf '%s\n' "${HG_REPO_ROOT}/node_modules/.bin:${gobin}${PATH}"
}
