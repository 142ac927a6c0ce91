// The shell text of the remote commands that ship a host's parts and secrets
// (components/hostDeployment.ts wires them to @pulumi/command; `npm run render`
// prints them). Pure functions: a command's text never carries a secret, which
// travels only on its stdin.
import { type PartBundle } from "./bundles";
import type { ChatFormat } from "./chatFormats";
import { type Part } from "./fileTable";
import { INSTALL_DIR } from "./hostFiles";

/** Shell text run over SSH for one part. It never carries a secret: the tar arrives on stdin. */
export function partCreateCommand(b: PartBundle, sudo: boolean): string {
    const script = [
        `# hostguard part ${b.part}: bundle sha256 ${b.sha256}`,
        "set -eu",
        "umask 077",
        "d=$(mktemp -d /tmp/hostguard.XXXXXXXX)",
        'trap "rm -rf $d" EXIT',
        'base64 -d | tar -xf - -C "$d"',
        // install reads its settings (hostguard.conf) and the expanded file table beside it.
        `"$d/install" install --part ${b.part}`,
    ].join("\n");
    return asRoot(script, sudo);
}

export function partDeleteCommand(part: Part, sudo: boolean): string {
    return asRoot(`${INSTALL_DIR}/install uninstall --part ${part}`, sudo);
}

/** What the webhook command prints when its connectivity test failed for now on a first set (scripts/hostguard/install/rotation.py). */
export const WEBHOOK_CHECK_TRANSIENT = "hostguard: connectivity test not delivered (transient failure)";

/**
 * Writes the webhook from stdin. With VERIFY (`install set-webhook --verify`,
 * scripts/hostguard/install/rotation.py) the new file is first a candidate beside the
 * old one, root's: the connectivity test goes to it (`hostguard-notify --test
 * --candidate`), and it replaces the old one only when the service took the
 * test. A refusal, or a "try later" answer while the host has a webhook, fails
 * the command (its error holds the notifier's lines: the status and the
 * service's error text, never the URL) and the host keeps delivering to the
 * old webhook. On the first set a "try later" answer sets it and prints
 * WEBHOOK_CHECK_TRANSIENT (the deploy warns).
 */
export function setWebhookCommand(sudo: boolean, verify = false): string {
    if (!verify) {
        return asRoot(`${INSTALL_DIR}/install set-webhook`, sudo);
    }
    return asRoot([
        "# hostguard webhook: a candidate, the connectivity test to it, then in place (verifyWebhook)",
        `${INSTALL_DIR}/install set-webhook --verify`,
    ].join("\n"), sudo);
}

/** Writes the heartbeat URL (`url=URL` on stdin) to heartbeat.conf, 0600. */
export function setHeartbeatCommand(sudo: boolean): string {
    return asRoot(`${INSTALL_DIR}/install set-heartbeat`, sudo);
}

/** Removes heartbeat.conf: the heartbeat stops. */
export function removeHeartbeatCommand(sudo: boolean): string {
    return asRoot(`${INSTALL_DIR}/install set-heartbeat --remove`, sudo);
}

/**
 * One `KEY=VALUE` line of a URL file (scripts/hostguard/urltext.py reads them). A value holding a line
 * break or NUL is refused (it would add a line); the error never shows it.
 */
function keyLine(key: string, value: string): string {
    if (/[\r\n\0]/.test(value)) {
        throw new Error(`the ${key}= value of a URL file may not hold a line break or NUL (value not shown)`);
    }
    return `${key}=${value}\n`;
}

/** The stdin of set-heartbeat: `url=URL`. Only ever built inside a secret Output. */
export function urlLine(url: string): string {
    return keyLine("url", url.trim());
}

/**
 * The stdin of set-webhook: the webhook file's text. `url=`, then, beside it in the same root-only
 * file, `format=` for any format but slack (the host's default) and, for PagerDuty, `routing_key=`:
 * so a rotation and a format change are one in-place update, and neither reaches argv. Only ever
 * built inside a secret Output.
 */
export function webhookFileText(url: string, format: ChatFormat = "slack", routingKey?: string): string {
    return urlLine(url) + (format !== "slack" ? keyLine("format", format) : "")
        + (routingKey !== undefined ? keyLine("routing_key", routingKey.trim()) : "");
}

function asRoot(script: string, sudo: boolean): string {
    if (script.includes("'")) {
        throw new Error("remote scripts must not contain single quotes");
    }
    return sudo ? `sudo -n sh -c '${script}'` : script;
}
