// The files a host receives that depend on the stack's settings, rendered as
// pure functions of the validated settings (model: pulumi-eks userdata.ts):
// the settings file hostguard.conf, the cron file and the fail2ban jail. The
// file table (scripts/files.table) names them by their source path; RENDERED
// maps that path to its renderer. Nothing here reads the disk.
import { HOST_SETTINGS, hostText, SETTINGS, type PayloadSettings, type SettingKey } from "./settings";

export const JAIL_NAME = "nginx-bad-request";
export const INSTALL_DIR = "/usr/local/lib/hostguard";

/** What a host's rendered files depend on: its settings and its cron minute. */
export interface HostValues {
    settings: PayloadSettings;
    /** Offset 0-9 of the every-10-minutes schedule. */
    cronMinute: number;
}

function line(key: string, value: string): string {
    if (/[\r\n]/.test(value)) {
        throw new Error(`settings value of ${key} must be one line`);
    }
    return `${key}=${value}`;
}

/**
 * hostguard.conf: the settings the host's scripts read at run time, keys in
 * the table's order. With `only`, just those rows (a part's install step).
 */
export function renderSettingsFile(s: PayloadSettings, only?: (key: SettingKey) => boolean): string {
    const rows = HOST_SETTINGS.filter((r) => only === undefined || only(r.key as SettingKey));
    return [
        "# hostguard settings, written by the Pulumi program (components/settings.ts).",
        "# Change the stack config and run `pulumi up`; edits here are overwritten.",
        ...rows.map((r) => line(r.host as string, hostText(r.key as SettingKey, s[r.key as SettingKey]))),
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

export function renderCron(cronMinute: number): string {
    const schedule = cronSchedule(cronMinute);
    return [
        "# hostguard: host and container monitors every 10 minutes.",
        "# Rendered by the Pulumi program (components/hostFiles.ts) and placed by",
        "# /usr/local/lib/hostguard/install; the minute offset is drawn once per host.",
        "SHELL=/bin/sh",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        `${schedule} root ${INSTALL_DIR}/host-monitor >> /var/log/hostguard/host-monitor.log 2>&1`,
        `${schedule} root ${INSTALL_DIR}/container-monitor >> /var/log/hostguard/container-monitor.log 2>&1`,
        "",
    ].join("\n");
}

export function renderJail(s: PayloadSettings): string {
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
        ...(s.banAction === "" ? [] : [`banaction = ${s.banAction}`]),
        "action    = %(action_)s",
        `            slack-notify[slack_channel="${s.slackChannel}"]`,
        "",
    ].join("\n");
}

/** Source paths of the file table that are rendered here, with their renderer. */
export const RENDERED: Readonly<Record<string, (v: HostValues) => string>> = {
    "cron.d/hostguard": (v) => renderCron(v.cronMinute),
    "fail2ban/jail.d/hostguard-nginx-bad-request.local": (v) => renderJail(v.settings),
};

/** Keys a part's install step reads from the settings file in its bundle. */
export function installKeys(part: string): SettingKey[] {
    return SETTINGS.filter((r) => "install" in r && r.install === part).map((r) => r.key);
}
