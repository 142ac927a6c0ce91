# shellcheck shell=bash
# render_payload DIR [--cron-minute N] [settingKey=value ...]
#   Writes into DIR what a deploy ships to a host (every part's bundle
#   merged: scripts, rendered cron file and jail, hostguard.conf), rendered
#   by the Pulumi program's own renderer (`tools/render.ts --payload`) from
#   stack-config settings validated as at preview. Tests install from DIR
#   with DIR/install, so they run exactly the bytes a host gets.
RENDER_PAYLOAD_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

render_payload() {
  local dir="$1" node="${RENDER_PAYLOAD_REPO}/node_modules/.bin/node"
  shift
  [[ -x "${node}" ]] || node=node
  (cd "${RENDER_PAYLOAD_REPO}" && "${node}" --import tsx tools/render.ts --payload "${dir}" "$@")
}
