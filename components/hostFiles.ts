// The files a host receives that depend on the stack's settings, rendered as
// pure functions of the validated settings (model: pulumi-eks userdata.ts):
// the settings file hostguard.conf, the cron file and the fail2ban jail. The
// file table (scripts/files.table) names them by their source path; RENDERED
// maps that path to its renderer. Nothing here reads the disk.
import { HOST_SETTINGS, hostText, SETTINGS, type PayloadSettings, type SettingKey } from "./settings";

export const JAIL_NAME = "nginx-bad-request";
export const INSTALL_DIR = "/usr/local/lib/hostguard";
/** The settings file: its source name in the file table and in every bundle (install reads it there). */
export const SETTINGS_FILE = "hostguard.conf";

/** What a host's rendered files depend on: its settings, its name and its schedule. */
export interface HostValues {
    settings: PayloadSettings;
    /** Offset 0-9 of the every-10-minutes schedule. */
    cronMinute: number;
    /** Seconds 0-59 the cron line sleeps after the minute (the rest of the host's 600 s offset). */
    cronSecond?: number;
    /** The host's name in hostguard:hosts (HOST_NAME, the label of its messages). */
    hostName?: string;
    /** hostguard:adminCidrs: the jail never bans them, so a deployer cannot lock themselves out. */
    adminCidrs?: readonly string[];
}

function line(key: string, value: string): string {
    if (/[\r\n]/.test(value)) {
        throw new Error(`settings value of ${key} must be one line`);
    }
    return `${key}=${value}`;
}

/**
 * hostguard.conf: the settings the host's scripts read at run time, keys in
 * the table's order, then the host's own HOST_NAME. With `only`, just those
 * rows (a part's install step).
 */
export function renderSettingsFile(s: PayloadSettings, only?: (key: SettingKey) => boolean, hostName = ""): string {
    const rows = HOST_SETTINGS.filter((r) => only === undefined || only(r.key as SettingKey));
    return [
        "# hostguard settings, written by the Pulumi program (components/settings.ts).",
        "# Change the stack config and run `pulumi up`; edits here are overwritten.",
        ...rows.map((r) => line(r.host as string, hostText(s[r.key as SettingKey]))),
        ...(only === undefined ? [line("HOST_NAME", hostName)] : []),
        "",
    ].join("\n");
}

/** The schedule of both monitors: every 10 minutes, shifted by the host's offset. */
export function cronSchedule(cronMinute: number): string {
    if (!Number.isInteger(cronMinute) || cronMinute < 0 || cronMinute > 9) {
        throw new Error(`cron minute must be an integer 0-9, got ${cronMinute}`);
    }
    return `${cronMinute}-59/10 * * * *`;
}

/**
 * The cron file. Cron starts a job on the minute; the rest of the host's
 * offset (cronSecond, 0-59) is a `sleep` in front of the command, left out
 * when 0 (then the line is the SPEC's every-10-minutes job as it was). With
 * containerMonitor false only the host monitor is scheduled (the container
 * monitor's script is still installed, and install does not need the runtime).
 */
export function renderCron(cronMinute: number, cronSecond = 0, containerMonitor = true): string {
    if (!Number.isInteger(cronSecond) || cronSecond < 0 || cronSecond > 59) {
        throw new Error(`cron second must be an integer 0-59, got ${cronSecond}`);
    }
    const schedule = cronSchedule(cronMinute);
    const wait = cronSecond === 0 ? "" : `sleep ${cronSecond}; `;
    const job = (name: string) => `${schedule} root ${wait}${INSTALL_DIR}/${name} >> /var/log/hostguard/${name}.log 2>&1`;
    return [
        containerMonitor
            ? "# hostguard: host and container monitors every 10 minutes."
            : "# hostguard: the host monitor every 10 minutes (the stack's containerMonitor is false: no container monitor).",
        "# Rendered by the Pulumi program (components/hostFiles.ts) and placed by",
        "# /usr/local/lib/hostguard/install; the offset (minute and second) is drawn",
        "# once per host, so a fleet spreads its posts over the 10 minutes.",
        "SHELL=/bin/sh",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        job("host-monitor"),
        ...(containerMonitor ? [job("container-monitor")] : []),
        "",
    ].join("\n");
}

/** Loopback, the admin networks and banIgnoreIps, each once, in that order. */
export function jailIgnoreIps(s: PayloadSettings, adminCidrs: readonly string[] = []): string[] {
    return [...new Set(["127.0.0.1/8", "::1", ...adminCidrs, ...s.banIgnoreIps])];
}

export function renderJail(s: PayloadSettings, adminCidrs: readonly string[] = []): string {
    return [
        "# hostguard: the nginx-bad-request jail (SPEC, ban jail configuration).",
        "# Rendered by the Pulumi program (components/hostFiles.ts) from the stack's",
        "# ban* settings; without banAction the distribution's banaction applies.",
        "# A jail.d/*.local drop-in overrides jail.conf exactly as jail.local does,",
        "# and leaves the user's own jail.local alone.",
        "#",
        "# action: the distribution's firewall ban (%(action_)s, on ports http and",
        "# https) and the chat notification together: the jail really blocks.",
        "#",
        "# backend = auto uses pyinotify when python3-pyinotify is installed (a ban",
        "# within a fraction of a second of the 10th line), else polls the file once",
        "# a second. It is set here because some distributions make systemd (the",
        "# journal) the default backend, which would never read logpath.",
        "#",
        "# ignoreip: loopback, the stack's adminCidrs and banIgnoreIps are never",
        "# banned, so a deployer cannot lock themselves out. With banIncrement,",
        "# bantime.increment doubles each new ban of an address (fail2ban's",
        "# database counts its earlier bans), up to bantime.maxtime.",
        "",
        `[${JAIL_NAME}]`,
        "enabled   = true",
        "port      = http,https",
        `filter    = ${JAIL_NAME}`,
        `logpath   = ${s.nginxAccessLog}`,
        "backend   = auto",
        `maxretry  = ${s.banMaxRetry}`,
        `findtime  = ${s.banFindTime}`,
        `bantime   = ${s.banBanTime}`,
        ...(s.banIncrement ? ["bantime.increment = true", "bantime.factor = 1", "bantime.maxtime = 1w"] : []),
        `ignoreip  = ${jailIgnoreIps(s, adminCidrs).join(" ")}`,
        ...(s.banAction === "" ? [] : [`banaction = ${s.banAction}`]),
        "action    = %(action_)s",
        `            slack-notify[slack_channel="${s.slackChannel}"]`,
        "",
    ].join("\n");
}

/** Source paths of the file table that are rendered here, with their renderer. */
export const RENDERED: Readonly<Record<string, (v: HostValues) => string>> = {
    [SETTINGS_FILE]: (v) => renderSettingsFile(v.settings, undefined, v.hostName),
    "cron.d/hostguard": (v) => renderCron(v.cronMinute, v.cronSecond, v.settings.containerMonitor),
    "fail2ban/jail.d/hostguard-nginx-bad-request.local": (v) => renderJail(v.settings, v.adminCidrs),
};

/** Keys a part's install step reads from the settings file in its bundle. */
export function installKeys(part: string): SettingKey[] {
    return SETTINGS.filter((r) => "install" in r && r.install === part).map((r) => r.key);
}
