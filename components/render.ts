// Everything a host receives, rendered by pure functions (model: pulumi-eks
// userdata.ts): the settings file `hostguard.conf` from typed settings, and per
// part (base, monitors, bantool, web) the payload files read from `scripts/`
// with their hashes, packed as a byte-deterministic tar. No Pulumi runtime here:
// the components, `npm run render` and the unit tests all call these functions.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as tarStream from "tar-stream";
import { PayloadSettings } from "./config";

export const PARTS = ["base", "monitors", "bantool", "web"] as const;
export type Part = (typeof PARTS)[number];

export const SCRIPTS_DIR = path.resolve(__dirname, "..", "scripts");
export const INSTALL_DIR = "/usr/local/lib/hostguard";
export const SETTINGS_PATH = "/etc/hostguard/hostguard.conf";
export const JAIL_NAME = "nginx-bad-request";
/** Name of the settings file inside the base bundle. */
export const SETTINGS_FILE = "hostguard.conf";

export interface PayloadFile {
    /** Path relative to scripts/, with forward slashes. */
    path: string;
    mode: 0o755 | 0o644;
    content: Buffer;
    sha256: string;
}

/**
 * Which part ships which file of scripts/, first match wins. The installer and
 * its libraries travel in every bundle (`install` copies "from the folder the
 * script sits in"), but only base installs them. A file no rule claims is an
 * error, so a new payload file cannot be silently left behind.
 */
const PART_RULES: ReadonlyArray<[RegExp, Part | "installer" | "skip"]> = [
    [/(^|\/)README\.md$/, "skip"],
    [/(^|\/)\.gitkeep$/, "skip"],
    [/^install$/, "installer"],
    [/^lib\//, "installer"],
    [/^hostguard-notify$/, "base"],
    [/(^|\/)(host-monitor|container-monitor)$/, "monitors"],
    [/(^|\/|-)(cron|logrotate)/, "monitors"],
    [/(^|\/)monitors?\//, "monitors"],
    [/fail2ban|(^|\/)(jail|filter|action)(\.d)?\/|jail|slack-notify|bantool/, "bantool"],
    [/nginx|deny|(^|\/)web\/|spring|application\.properties|app-properties/, "web"],
];

export function partOf(file: string): Part | "installer" | "skip" {
    for (const [re, part] of PART_RULES) {
        if (re.test(file)) {
            return part;
        }
    }
    throw new Error(`scripts/${file} belongs to no part: add a rule to PART_RULES in components/render.ts`);
}

export function sha256(data: string | Buffer): string {
    return createHash("sha256").update(data).digest("hex");
}

/** All files of the payload folder, sorted, with their mode (from the executable bit) and hash. */
export function readPayload(dir: string = SCRIPTS_DIR): PayloadFile[] {
    const out: PayloadFile[] = [];
    const walk = (rel: string): void => {
        for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
            const relPath = rel ? `${rel}/${entry.name}` : entry.name;
            if (entry.isDirectory()) {
                walk(relPath);
            } else if (entry.isFile()) {
                const full = path.join(dir, relPath);
                const content = fs.readFileSync(full);
                const mode = (fs.statSync(full).mode & 0o111) !== 0 ? 0o755 : 0o644;
                out.push({ path: relPath, mode, content, sha256: sha256(content) });
            }
        }
    };
    walk("");
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The settings as `KEY=VALUE` lines, keys exactly as scripts/README.md lists them. */
export function settingsEntries(s: PayloadSettings, cronMinute: number): Array<[string, string]> {
    if (!Number.isInteger(cronMinute) || cronMinute < 0 || cronMinute > 9) {
        throw new Error(`cron minute must be an integer 0-9, got ${cronMinute}`);
    }
    return [
        ["CPU_THRESHOLD", String(s.cpuThreshold)],
        ["MEMORY_THRESHOLD", String(s.memoryThreshold)],
        ["DISK_THRESHOLD", String(s.diskThreshold)],
        ["CONTAINER_RUNTIME", s.containerRuntime],
        ["CONTAINER_WATCH", s.containerWatch.join(",")],
        ["NOTIFY_CA_FILE", s.notifyCaFile],
        ["NOTIFY_MAX_TIME", String(s.notifyMaxTime)],
        ["NOTIFY_ATTEMPTS", String(s.notifyAttempts)],
        ["NOTIFY_BUDGET", String(s.notifyBudget)],
        ["SLACK_CHANNEL", s.slackChannel],
        ["BAN_MAXRETRY", String(s.banMaxRetry)],
        ["BAN_FINDTIME", s.banFindTime],
        ["BAN_BANTIME", s.banBanTime],
        ["BAN_ACTION", s.banAction],
        ["NGINX_ACCESS_LOG", s.nginxAccessLog],
        ["NGINX_SERVER_CONF", s.nginxServerConf],
        ["APP_PROPERTIES", s.appProperties],
        ["CRON_MINUTE", String(cronMinute)],
    ];
}

export function renderSettings(s: PayloadSettings, cronMinute: number): string {
    const lines = settingsEntries(s, cronMinute).map(([k, v]) => {
        if (/[\r\n]/.test(v)) {
            throw new Error(`settings value of ${k} must be one line`);
        }
        return `${k}=${v}`;
    });
    return [
        "# hostguard settings, written by the Pulumi program (components/render.ts).",
        "# Change the stack config and run `pulumi up`; edits here are overwritten.",
        ...lines,
        "",
    ].join("\n");
}

/** The schedule of both monitors: every 10 minutes, shifted by the host's offset. */
export function cronSchedule(cronMinute: number): string {
    return `${cronMinute}-59/10 * * * *`;
}

/** Settings keys a part's templates (`*.in`, `@KEY@`) use: a change to one of them re-runs that part. */
export function templateKeys(files: PayloadFile[]): string[] {
    const keys = new Set<string>();
    for (const f of files) {
        if (f.path.endsWith(".in")) {
            for (const m of f.content.toString("utf8").matchAll(/@([A-Z][A-Z0-9_]*)@/g)) {
                keys.add(m[1]);
            }
        }
    }
    return [...keys].sort();
}

export interface PartBundle {
    part: Part;
    /** Files in the tar, sorted (base also carries hostguard.conf). */
    files: PayloadFile[];
    /** Settings keys this part's templates use (empty for base, which ships the whole file). */
    settingsKeys: string[];
    /** Hash of the files: what decides whether this part runs again. */
    sha256: string;
    /** Hash of the values of settingsKeys (a hash of "" when none). */
    settingsSha256: string;
}

/** The bundle of one part: installer + the part's files (+ the settings file for base). */
export function partBundle(part: Part, payload: PayloadFile[], settingsText: string): PartBundle {
    const installer = payload.filter((f) => partOf(f.path) === "installer");
    const own = payload.filter((f) => partOf(f.path) === part);
    const files = [...installer, ...own];
    if (part === "base") {
        const content = Buffer.from(settingsText, "utf8");
        files.push({ path: SETTINGS_FILE, mode: 0o644, content, sha256: sha256(content) });
    }
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const settingsKeys = part === "base" ? [] : templateKeys(own);
    const values = new Map(settingsText.split("\n").filter((l) => /^[A-Z]/.test(l)).map((l) => {
        const i = l.indexOf("=");
        return [l.slice(0, i), l.slice(i + 1)] as [string, string];
    }));
    const settingsLines = settingsKeys.map((k) => `${k}=${values.get(k) ?? ""}\n`).join("");
    return {
        part,
        files,
        settingsKeys,
        sha256: sha256(files.map((f) => `${f.mode.toString(8)} ${f.sha256} ${f.path}\n`).join("")),
        settingsSha256: sha256(settingsLines),
    };
}

/** Every part's bundle for one host. */
export function renderHost(settings: PayloadSettings, cronMinute: number, payload: PayloadFile[] = readPayload()): {
    settingsText: string;
    bundles: PartBundle[];
} {
    const settingsText = renderSettings(settings, cronMinute);
    return { settingsText, bundles: PARTS.map((p) => partBundle(p, payload, settingsText)) };
}

/** A ustar archive with fixed owner, time and order: the same files give the same bytes. */
export async function tarFiles(files: PayloadFile[]): Promise<Buffer> {
    const pack = tarStream.pack();
    const chunks: Buffer[] = [];
    const done = new Promise<Buffer>((resolve, reject) => {
        pack.on("data", (c: unknown) => chunks.push(c as Buffer));
        pack.on("end", () => resolve(Buffer.concat(chunks)));
        pack.on("error", reject);
    });
    for (const f of files) {
        pack.entry({
            name: f.path, size: f.content.length, mode: f.mode, mtime: new Date(0),
            uid: 0, gid: 0, uname: "root", gname: "root", type: "file",
        }, f.content);
    }
    pack.finalize();
    return done;
}

/** Shell text run over SSH for one part. It never carries a secret: the tar arrives on stdin. */
export function partCreateCommand(b: PartBundle, sudo: boolean): string {
    const settings = b.part === "base" ? `"$d/${SETTINGS_FILE}"` : SETTINGS_PATH;
    const script = [
        `# hostguard part ${b.part}: payload sha256 ${b.sha256}` +
            (b.part === "base" ? "" : `, settings sha256 ${b.settingsSha256}`),
        "set -eu",
        "umask 077",
        "d=$(mktemp -d /tmp/hostguard.XXXXXXXX)",
        'trap "rm -rf $d" EXIT',
        'base64 -d | tar -xf - -C "$d"',
        `"$d/install" install --part ${b.part} --settings ${settings}`,
    ].join("\n");
    return asRoot(script, sudo);
}

export function partDeleteCommand(part: Part, sudo: boolean): string {
    return asRoot(`${INSTALL_DIR}/install uninstall --part ${part}`, sudo);
}

export function setWebhookCommand(sudo: boolean): string {
    return asRoot(`${INSTALL_DIR}/install set-webhook`, sudo);
}

/** The stdin of set-webhook: the curl config line. Only ever built inside a secret Output. */
export function webhookStdin(url: string): string {
    return `url = "${url.trim()}"\n`;
}

function asRoot(script: string, sudo: boolean): string {
    if (script.includes("'")) {
        throw new Error("remote scripts must not contain single quotes");
    }
    return sudo ? `sudo -n sh -c '${script}'` : script;
}
