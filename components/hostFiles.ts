// The files a host receives that depend on the stack's settings, rendered as
// pure functions of the validated settings (model: pulumi-eks userdata.ts),
// the same for every host of a stack:
// the settings file hostguard.conf, the cron file and the fail2ban jail. The
// file table (scripts/files.table) names them by their source path; RENDERED
// maps that path to its renderer. Nothing here reads the disk.
import { HOST_SETTINGS, hostText, SETTINGS, type PayloadSettings, type SettingKey } from "./settings";

export const JAIL_NAME = "nginx-bad-request";
export const INSTALL_DIR = "/usr/local/lib/hostguard";
/** The settings file: its source name in the file table and in every bundle (install reads it there). */
export const SETTINGS_FILE = "hostguard.conf";

/**
 * What the rendered files depend on: the stack's settings, never one host's
 * name or offset, so every host of a stack receives the same bytes (one
 * object serves a whole fleet, components/fleet.ts). The host's name comes
 * from the host (HOST_NAME is left empty: the kernel's name); the monitors'
 * offset is derived on the host (scripts/at-offset.sh) unless the stack pins
 * a minute.
 */
export interface HostValues {
    settings: PayloadSettings;
    /** hostguard:cronMinute: every host runs its monitors on this minute (0-9, second 0); absent: derived on each host. */
    cronMinute?: number;
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
 * the table's order, then HOST_NAME, empty: the host labels its messages with
 * its own (kernel's) name, so the file is the same for every host. With
 * `only`, just those rows (a part's install step).
 */
export function renderSettingsFile(s: PayloadSettings, only?: (key: SettingKey) => boolean): string {
    const rows = HOST_SETTINGS.filter((r) => only === undefined || only(r.key as SettingKey));
    return [
        "# hostguard settings, written by the Pulumi program (components/settings.ts).",
        "# Change the stack config and run `pulumi up`; edits here are overwritten.",
        ...rows.map((r) => line(r.host as string, hostText(s[r.key as SettingKey]))),
        ...(only === undefined ? [line("HOST_NAME", "")] : []),
        "",
    ].join("\n");
}

/** The schedule of both monitors: every 10 minutes, from the pinned minute (0 when derived on the host). */
export function cronSchedule(cronMinute = 0): string {
    if (!Number.isInteger(cronMinute) || cronMinute < 0 || cronMinute > 9) {
        throw new Error(`cron minute must be an integer 0-9, got ${cronMinute}`);
    }
    return `${cronMinute}-59/10 * * * *`;
}

/** Runs a monitor after the host's own offset (scripts/at-offset.sh, part monitors). */
export const AT_OFFSET = `${INSTALL_DIR}/at-offset.sh`;

/**
 * The cron file, the same for every host. Cron starts a job on the minute:
 * with a pinned cronMinute the monitors run on it; otherwise on every
 * 10-minute mark through at-offset.sh, which sleeps the host's offset
 * (0-599 s, derived from its instance id) first. With containerMonitor false
 * only the host monitor is scheduled (the container monitor's script is
 * still installed, and install does not need the runtime).
 */
export function renderCron(cronMinute: number | undefined, containerMonitor = true): string {
    const schedule = cronSchedule(cronMinute);
    const wait = cronMinute === undefined ? `sh ${AT_OFFSET} ` : "";
    const job = (name: string) => `${schedule} root ${wait}${INSTALL_DIR}/${name} >> /var/log/hostguard/${name}.log 2>&1`;
    return [
        containerMonitor
            ? "# hostguard: host and container monitors every 10 minutes."
            : "# hostguard: the host monitor every 10 minutes (the stack's containerMonitor is false: no container monitor).",
        "# Rendered by the Pulumi program (components/hostFiles.ts) and placed by",
        "# /usr/local/lib/hostguard/install; the same on every host of the stack.",
        ...(cronMinute === undefined
            ? ["# at-offset.sh waits this host's offset (0-599 s, from its instance id),",
                "# so a fleet spreads its posts over the 10 minutes."]
            : ["# The stack pins the minute (hostguard:cronMinute)."]),
        "SHELL=/bin/sh",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        job("host-monitor"),
        ...(containerMonitor ? [job("container-monitor")] : []),
        "",
    ].join("\n");
}

/** Loopback, the admin networks, banIgnoreIps and the trusted proxies, each once, in that order. */
export function jailIgnoreIps(s: PayloadSettings, adminCidrs: readonly string[] = []): string[] {
    return [...new Set(["127.0.0.1/8", "::1", ...adminCidrs, ...s.banIgnoreIps, ...s.trustedProxies])];
}

/** The ban action that keeps nginx's ban list (with trustedProxies), and its helper on the host. */
export const NGINX_BAN_ACTION = "hostguard-nginx-ban";
/**
 * nginx's ban list: kept by the ban action (root's, replaced atomically),
 * read through the drop-in's map. In hostguard's root-only state directory:
 * nginx's master process reads its configuration as root.
 */
export const NGINX_BAN_LIST = "/var/lib/hostguard/nginx-bans.map";
/** The http-context drop-in (Debian's and Ubuntu's nginx.conf include conf.d/*.conf inside http {}). */
export const NGINX_REALIP_DROPIN = "/etc/nginx/conf.d/hostguard-realip.conf";
/**
 * The main-context drop-in with trustedProxies (modules-enabled/*.conf is the one main-context include
 * of Debian's and Ubuntu's nginx.conf; conf.d/ is inside http {}), placed only where nginx reads it and
 * the user sets no worker_shutdown_timeout of their own (scripts/hostguard/install/workershutdown.py).
 */
export const NGINX_WORKER_SHUTDOWN_DROPIN = "/etc/nginx/modules-enabled/hostguard-worker-shutdown.conf";
/**
 * Seconds an old nginx worker may serve its open connections after a reload. Each ban pass
 * reloads nginx (at most one per 2 s), so at most about 15 old generations are alive at once
 * however slowly clients read; a download still running 30 s after a reload is cut.
 */
export const NGINX_WORKER_SHUTDOWN_SECONDS = 30;
/** The variable the drop-in's map sets for a banned client (non-empty) and the deny snippet checks. */
export const NGINX_BANNED_VAR = "$hostguard_banned";

export function renderJail(s: PayloadSettings, adminCidrs: readonly string[] = []): string {
    const proxied = s.trustedProxies.length > 0;
    return [
        "# hostguard: the nginx-bad-request jail (SPEC, ban jail configuration).",
        "# Rendered by the Pulumi program (components/hostFiles.ts) from the stack's",
        "# ban* settings; without banAction the distribution's banaction applies.",
        "# A jail.d/*.local drop-in overrides jail.conf exactly as jail.local does,",
        "# and leaves the user's own jail.local alone.",
        "#",
        "# action: the distribution's firewall ban (%(action_)s, on ports http and",
        "# https) and the chat notification together: the jail really blocks.",
        "# slack-notify.py is a Python action (fail2ban loads action.d/slack-notify.py",
        "# into its own process; its name in the jail is slack-notify).",
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
        ...(proxied ? [
            "#",
            "# trustedProxies: nginx logs the client's address from the proxies'",
            "# X-Forwarded-For, so the jail counts and bans clients, never a proxy",
            "# (the proxies are in ignoreip too). A client behind a proxy cannot be",
            "# stopped by the firewall (its packets come from the proxy): the",
            `# ${NGINX_BAN_ACTION} action also puts the address in nginx's ban list`,
            `# (${NGINX_BAN_LIST}), which nginx refuses with 403.`,
        ] : []),
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
        ...(proxied ? [`            ${NGINX_BAN_ACTION}.py`] : []),
        `            slack-notify.py[slack_channel="${s.slackChannel}"]`,
        "",
    ].join("\n");
}

/** One address or CIDR of trustedProxies for nginx (validated by config.ts; this only refuses what would break the line). */
function proxyAddress(a: string): string {
    if (!/^[0-9A-Fa-f.:]+(\/[0-9]{1,3})?$/.test(a)) {
        throw new Error(`trusted proxy ${JSON.stringify(a)} is not an address or CIDR`);
    }
    return a;
}

/**
 * The http-context drop-in of part web when trustedProxies is set: nginx's
 * realip module takes the client's address from X-Forwarded-For when the
 * connection comes from a trusted proxy (recursively, so a chain of trusted
 * proxies is skipped), and the map gives a banned client's address a
 * non-empty $hostguard_banned, which the deny snippet answers with 403.
 */
export function renderRealIpDropIn(s: PayloadSettings): string {
    return [
        "# hostguard: nginx behind trusted proxies (stack config trustedProxies).",
        "# Rendered by the Pulumi program (components/hostFiles.ts) and placed by",
        "# `install --part web` in the http context (conf.d/*.conf is included",
        "# inside http {} by Debian's and Ubuntu's nginx.conf).",
        "#",
        "# A request from one of these addresses has its client address taken",
        "# from X-Forwarded-For (the rightmost address that is not a trusted",
        "# proxy): $remote_addr, the access log, the jail and the ban all see the",
        "# client, never the proxy. A request from anywhere else keeps its own",
        "# address, whatever X-Forwarded-For it sends.",
        ...s.trustedProxies.map((a) => `set_real_ip_from ${proxyAddress(a)};`),
        "real_ip_header X-Forwarded-For;",
        "real_ip_recursive on;",
        "",
        "# The addresses the nginx-bad-request jail bans: the ban action",
        `# (${NGINX_BAN_ACTION}) keeps one \`ADDRESS 1;\` line per ban in the list and`,
        "# reloads nginx; the deny snippet answers a listed client 403. The list",
        "# is named by a glob ([p]) so that nginx reads nothing, and starts, while",
        "# the ban tool has not written it yet.",
        `map $remote_addr ${NGINX_BANNED_VAR} {`,
        "    default \"\";",
        `    include ${NGINX_BAN_LIST.replace(/p$/, "[p]")};`,
        "}",
        "",
    ].join("\n");
}

/** The main-context drop-in of part web with trustedProxies: old workers end within a set time. */
export function renderWorkerShutdownDropIn(): string {
    return [
        "# hostguard: old nginx workers end within a set time (stack config trustedProxies).",
        "# Rendered by the Pulumi program (components/hostFiles.ts) and placed by",
        "# `install --part web` in nginx's main context (modules-enabled/*.conf is",
        "# included at the top of Debian's and Ubuntu's nginx.conf), only when no",
        "# worker_shutdown_timeout of yours is set; uninstall removes it.",
        "#",
        `# The ${NGINX_BAN_ACTION} action reloads nginx for its bans; a reload's old`,
        "# workers live on while a client holds a connection to them, so a slow",
        "# download opened before each ban would keep every generation alive.",
        `worker_shutdown_timeout ${NGINX_WORKER_SHUTDOWN_SECONDS}s;`,
        "",
    ].join("\n");
}

/**
 * The deny snippet with trustedProxies: the refusal of banned clients first,
 * then the deny rule as scripts/ has it. It is included at the top of every
 * server block and location, so a banned client is refused whichever
 * location would serve it.
 */
export function renderProxiedDenySnippet(deny: string): string {
    return [
        "# hostguard: clients the nginx-bad-request jail banned (trustedProxies is",
        "# set: a client behind a proxy is refused here, since the firewall only",
        `# sees the proxy). ${NGINX_BANNED_VAR} comes from the map of`,
        `# ${NGINX_REALIP_DROPIN}.`,
        `if (${NGINX_BANNED_VAR}) {`,
        "    return 403;",
        "}",
        deny,
    ].join("\n");
}

/**
 * Source paths of the file table that are rendered here, with their
 * renderer; READ gives the text of a file of scripts/ (the proxied deny
 * snippet starts from the plain one).
 */
export const RENDERED: Readonly<Record<string, (v: HostValues, read: (source: string) => string) => string>> = {
    [SETTINGS_FILE]: (v) => renderSettingsFile(v.settings),
    "cron.d/hostguard": (v) => renderCron(v.cronMinute, v.settings.containerMonitor),
    "fail2ban/jail.d/hostguard-nginx-bad-request.local": (v) => renderJail(v.settings, v.adminCidrs),
    "nginx/hostguard-realip.conf": (v) => renderRealIpDropIn(v.settings),
    "nginx/hostguard-worker-shutdown.conf": () => renderWorkerShutdownDropIn(),
    "nginx/hostguard-deny-proxied.conf": (_v, read) => renderProxiedDenySnippet(read("nginx/hostguard-deny.conf")),
};

/** Keys a part's install step reads from the settings file in its bundle. */
export function installKeys(part: string): SettingKey[] {
    return SETTINGS.filter((r) => "install" in r && r.install === part).map((r) => r.key);
}
