# shellcheck shell=bash
# Source this file (`. tools/pulumi-env.sh`) to run Pulumi for this repository.
# It picks the engine and puts the repository's Node 22 first on PATH (the
# language host starts `node` from PATH):
#   - a real `pulumi` CLI already on PATH (Pulumi's installer, a package, ...)
#     is used as it is: its own PULUMI_HOME, its own plugin downloads;
#   - otherwise the engine tools/build-pulumi.sh builds from the Go module
#     proxy: its cached CLI and language host go first on PATH, PULUMI_HOME is
#     the cache's, and nothing downloads a plugin behind the program's back.
# Whatever the CLI, hg_pulumi_engine_missing installs the provider plugins the
# program needs the usual way (`pulumi plugin install resource command 1.2.1`,
# or `--file` with a supplied binary) and, when that fails, names what is
# missing and how to supply it. Plugin versions are read from the installed
# packages (node_modules/@pulumi/NAME), never listed here.
# Reads: HOSTGUARD_PULUMI_CACHE, XDG_CACHE_HOME, HOME, PATH, PULUMI_HOME (a real
# CLI's), HOSTGUARD_PULUMI_COMMAND_BIN / HOSTGUARD_PULUMI_RANDOM_BIN (plugin
# binaries to install instead of downloading).
# Callers choose the backend (PULUMI_BACKEND_URL=file://DIR keeps PULUMI_HOME
# free of login state) and PULUMI_CONFIG_PASSPHRASE themselves.

# The built CLI: newest pkg/v3 the Go module proxy serves (403 from v3.260.0 on).
HOSTGUARD_PULUMI_VERSION="3.259.0"
# The built Node.js language host: newest sdk/v3 on the proxy whose module
# still holds nodejs/cmd/pulumi-language-nodejs (v3.69.0 moved it out).
HOSTGUARD_LANGHOST_SDK_VERSION="3.68.0"
HOSTGUARD_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOSTGUARD_PULUMI_CACHE="${HOSTGUARD_PULUMI_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/pulumi}"
# A new key per CLI/language-host pair, so a pair built another way never
# shadows this one.
HOSTGUARD_PULUMI_BIN="${HOSTGUARD_PULUMI_CACHE}/cli-v${HOSTGUARD_PULUMI_VERSION}-langhost-sdk-v${HOSTGUARD_LANGHOST_SDK_VERSION}"
HOSTGUARD_NODE_BIN="${HOSTGUARD_REPO_ROOT}/node_modules/.bin"

# hg_plugin_version NAME: the provider plugin version that the installed
# @pulumi/NAME package asks for (its pulumi-plugin.json, else its package.json);
# empty when the package is not installed.
hg_plugin_version() {
  local dir="${HOSTGUARD_REPO_ROOT}/node_modules/@pulumi/$1" file
  for file in "${dir}/pulumi-plugin.json" "${dir}/package.json"; do
    if [[ -f "${file}" ]]; then
      node -e 'process.stdout.write(String(require(process.argv[1]).version ?? ""))' "${file}" 2>/dev/null
      return 0
    fi
  done
}

HOSTGUARD_COMMAND_VERSION="$(hg_plugin_version command)"
HOSTGUARD_RANDOM_VERSION="$(hg_plugin_version random)"

# A pulumi on PATH that is not this cache's build is a real CLI: "system".
hg_found_cli="$(command -v pulumi 2>/dev/null || true)"
if [[ -n "${hg_found_cli}" && "${hg_found_cli}" != "${HOSTGUARD_PULUMI_CACHE}"/* ]]; then
  HOSTGUARD_PULUMI_SOURCE=system
else
  HOSTGUARD_PULUMI_SOURCE=built
fi
unset hg_found_cli
export HOSTGUARD_PULUMI_VERSION HOSTGUARD_LANGHOST_SDK_VERSION HOSTGUARD_REPO_ROOT
export HOSTGUARD_COMMAND_VERSION HOSTGUARD_RANDOM_VERSION HOSTGUARD_PULUMI_SOURCE
export HOSTGUARD_PULUMI_CACHE HOSTGUARD_PULUMI_BIN HOSTGUARD_NODE_BIN

hg_path_prepend() {
  case ":${PATH}:" in
    *":$1:"*) ;;
    *) PATH="$1:${PATH}" ;;
  esac
}
if [[ "${HOSTGUARD_PULUMI_SOURCE}" == built ]]; then
  hg_path_prepend "${HOSTGUARD_PULUMI_BIN}"
  export PULUMI_HOME="${HOSTGUARD_PULUMI_CACHE}/home"
  export PULUMI_SKIP_UPDATE_CHECK=true
  # Explicit `pulumi plugin install` still works; this only stops an `up`
  # from trying to download plugins of packages the program does not use.
  export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
fi
hg_path_prepend "${HOSTGUARD_NODE_BIN}"
export PATH

# hg_pulumi_plugin_installed NAME VERSION: the resource plugin is in the
# CLI's PULUMI_HOME (~/.pulumi when unset) and not half-installed.
hg_pulumi_plugin_installed() {
  local dir="${PULUMI_HOME:-${HOME}/.pulumi}/plugins/resource-$1-v$2"
  [[ -n "$2" && -x "${dir}/pulumi-resource-$1" && ! -e "${dir}.partial" ]]
}

# The language host: next to the CLI (how both engines ship it) or on PATH.
hg_pulumi_language_host() {
  local cli
  cli="$(command -v pulumi 2>/dev/null)" || return 1
  if [[ -x "$(dirname "${cli}")/pulumi-language-nodejs" ]]; then
    printf '%s\n' "$(dirname "${cli}")/pulumi-language-nodejs"
  else
    command -v pulumi-language-nodejs
  fi
}

# hg_pulumi_install_plugin NAME VERSION: installs the resource plugin the usual
# way (downloaded by the CLI), or from HOSTGUARD_PULUMI_<NAME>_BIN when set.
# Output on stderr; fails when the CLI cannot install it.
hg_pulumi_install_plugin() {
  local name="$1" version="$2" var binary
  hg_pulumi_plugin_installed "${name}" "${version}" && return 0
  var="HOSTGUARD_PULUMI_${name^^}_BIN"
  binary="${!var:-}"
  if [[ -n "${binary}" ]]; then
    [[ -x "${binary}" ]] || {
      printf '%s=%s is not an executable file\n' "${var}" "${binary}" >&2
      return 1
    }
    timeout 300 pulumi plugin install resource "${name}" "${version}" --file "${binary}" >&2
  else
    timeout 300 pulumi plugin install resource "${name}" "${version}" >&2
  fi
  hg_pulumi_plugin_installed "${name}" "${version}"
}

# Prints why this machine cannot deploy a program using @pulumi/command,
# nothing when it can: a CLI, its Node.js language host, the installed npm
# packages and the command plugin, which is installed first when missing.
hg_pulumi_engine_missing() {
  local v="${HOSTGUARD_COMMAND_VERSION}"
  if [[ -z "${v}" ]]; then
    echo "node_modules/@pulumi/command is not installed (run npm ci in ${HOSTGUARD_REPO_ROOT})"
    return 0
  fi
  if ! command -v pulumi >/dev/null 2>&1; then
    echo "a pulumi CLI: none on PATH and none built in ${HOSTGUARD_PULUMI_BIN} (install Pulumi's CLI, or run tools/build-pulumi.sh)"
    return 0
  fi
  if ! hg_pulumi_language_host >/dev/null; then
    echo "the Node.js language host pulumi-language-nodejs, neither next to $(command -v pulumi) nor on PATH"
    return 0
  fi
  if ! hg_pulumi_install_plugin command "${v}"; then
    echo "the command provider plugin ${v} (@pulumi/command) in ${PULUMI_HOME:-${HOME}/.pulumi}: \`pulumi plugin install resource command ${v}\` failed (no way to its download server from here?); supply the binary: HOSTGUARD_PULUMI_COMMAND_BIN=/path/to/pulumi-resource-command (v${v}), or run \`pulumi plugin install resource command ${v} --file /path/to/pulumi-resource-command\`"
  fi
}

# Succeeds when the engine can deploy a program using @pulumi/command now,
# without installing anything.
hg_pulumi_can_deploy_command() {
  command -v pulumi >/dev/null 2>&1 && hg_pulumi_language_host >/dev/null &&
    hg_pulumi_plugin_installed command "${HOSTGUARD_COMMAND_VERSION}"
}
