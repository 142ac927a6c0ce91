// The one table of hostguard's settings: for every key its stack-config name,
// its name in the host's `hostguard.conf` (or none when only a rendered file
// uses it), its type, default, allowed values and one line of documentation.
// Everything else is derived from it: the validator (components/config.ts),
// the defaults, the rendered settings file, the host parser's HG_DEFAULTS /
// HG_PATTERNS / HG_RANGES block in scripts/lib/common.sh and both README
// tables (`npm run settings:gen` writes those three; a unit test fails when
// they differ). Pure: no Pulumi runtime.
//
// A pattern is written once and used twice, by bash's `[[ =~ ]]` (POSIX ERE,
// C locale) and by JavaScript's RegExp (jsPattern), so it uses only what both
// read the same: bracket expressions of ASCII ranges, `{m,n}`, groups, `|`,
// `^` and `$`; `[:cntrl:]` inside a bracket is translated for JavaScript.

export type SettingType = "percent" | "integer" | "duration" | "word" | "path" | "names" | "boolean";

/** Which part's install step reads a setting (besides the scripts at run time). */
export type InstallPart = "web";

/** Where a setting that no host script reads takes effect. */
export type SettingUse = "jail" | "deploy";

export interface SettingRow {
    /** Stack config key, in the `hostguard:` namespace. */
    readonly key: string;
    /** Key in hostguard.conf; null when no host script reads it (it lands in a rendered file). */
    readonly host: string | null;
    readonly type: SettingType;
    /** The default, written as on the host (a list as comma-separated names). */
    readonly default: string;
    /** The text form must match this in full (for `names`: each name, trimmed). */
    readonly pattern: string;
    /** Inclusive range of a number (a duration's in seconds). */
    readonly min?: number;
    readonly max?: number;
    /** Allowed values in words, for error messages and the READMEs. */
    readonly allowed: string;
    readonly doc: string;
    /** The part whose install step reads it (its bundle carries it). */
    readonly install?: InstallPart;
    /** For a row without `host`: rendered into the jail (the default) or used by the deploy itself. */
    readonly use?: SettingUse;
}

const INT = "(0|[1-9][0-9]{0,8})";
const PERCENT = "^(0|[1-9][0-9]{0,2})(\\.[0-9]{1,2})?$";
/** A path segment: plain characters, may start with one dot but is never `.` or `..`. */
const SEGMENT = "/\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*";
const PATH = `^(${SEGMENT})+$`;
const OPTIONAL_PATH = `^((${SEGMENT})+)?$`;
const BOOLEAN = "^(true|false)$";
const DURATION = `^(${INT}|(${INT}[smhdw])+)$`;
/** An IPv4 or IPv6 address with an optional prefix length (config.ts then checks it with node:net). */
const ADDRESS = "^([0-9]{1,3}([.][0-9]{1,3}){3}|[0-9A-Fa-f]{0,4}(:[0-9A-Fa-f]{0,4}){2,7})(/[0-9]{1,3})?$";

export const SETTINGS = [
    {
        key: "cpuThreshold", host: "CPU_THRESHOLD", type: "percent", default: "80", pattern: PERCENT, min: 0, max: 100,
        allowed: "a percentage 0-100, at most 2 decimals", doc: "host and container CPU percent; fires when strictly greater",
    },
    {
        key: "memoryThreshold", host: "MEMORY_THRESHOLD", type: "percent", default: "90", pattern: PERCENT, min: 0, max: 100,
        allowed: "a percentage 0-100, at most 2 decimals", doc: "host and container memory percent; fires when strictly greater",
    },
    {
        key: "diskThreshold", host: "DISK_THRESHOLD", type: "percent", default: "90", pattern: PERCENT, min: 0, max: 100,
        allowed: "a percentage 0-100, at most 2 decimals", doc: "root filesystem percent; fires when strictly greater",
    },
    {
        key: "containerRuntime", host: "CONTAINER_RUNTIME", type: "word", default: "docker",
        pattern: `^([A-Za-z0-9_][A-Za-z0-9._-]{0,63}|(${SEGMENT})+)$`,
        allowed: "a command name or an absolute path", doc: "the container runtime command",
    },
    {
        key: "containerWatch", host: "CONTAINER_WATCH", type: "names", default: "",
        pattern: "^[^[:cntrl:],]{1,128}$",
        allowed: "a list of container names (no comma or control character; spaces around a name are ignored)",
        doc: "containers that must always run (comma-separated on the host)",
    },
    {
        key: "notifyCaFile", host: "NOTIFY_CA_FILE", type: "path", default: "", pattern: OPTIONAL_PATH,
        allowed: "empty or an absolute path", doc: "CA bundle for the webhook's TLS (empty: the system CAs)",
    },
    {
        key: "notifyMaxTime", host: "NOTIFY_MAX_TIME", type: "integer", default: "10", pattern: `^${INT}$`, min: 1, max: 300,
        allowed: "an integer 1-300, at most notifyBudget", doc: "seconds per delivery attempt (curl --max-time)",
    },
    {
        key: "notifyAttempts", host: "NOTIFY_ATTEMPTS", type: "integer", default: "3", pattern: `^${INT}$`, min: 1, max: 20,
        allowed: "an integer 1-20", doc: "attempts per message per run",
    },
    {
        key: "notifyBudget", host: "NOTIFY_BUDGET", type: "integer", default: "40", pattern: `^${INT}$`, min: 1, max: 55,
        allowed: "an integer 1-55", doc: "seconds one run may spend delivering (below fail2ban's 60 s action timeout)",
    },
    {
        key: "notifySpoolMax", host: "NOTIFY_SPOOL_MAX", type: "integer", default: "1000", pattern: `^${INT}$`, min: 1, max: 100000,
        allowed: "an integer 1-100000", doc: "messages kept in the spool at most; on overflow the oldest are dropped and counted",
    },
    {
        key: "slackChannel", host: "SLACK_CHANNEL", type: "word", default: "alerts", pattern: "^[a-z0-9][a-z0-9._-]{0,79}$",
        allowed: "a channel name without #: a-z, 0-9, . _ -, at most 80", doc: "channel of the ban tool's start/stop messages",
    },
    {
        key: "alertHostLabel", host: "ALERT_HOST_LABEL", type: "boolean", default: "false", pattern: BOOLEAN,
        allowed: "true or false", doc: "every message (monitors, ban tool, connectivity test) starts with `[<host name>] `",
    },
    {
        key: "alertRepeatInterval", host: "ALERT_REPEAT_INTERVAL", type: "duration", default: "0", pattern: DURATION, min: 0, max: 2592000,
        allowed: "a duration 0-30d such as 0, 30m, 1h (units s m h d w)",
        doc: "a measure that stays over its threshold posts again at most once per this duration (0: every run, the SPEC)",
    },
    {
        key: "alertSendResolved", host: "ALERT_SEND_RESOLVED", type: "boolean", default: "false", pattern: BOOLEAN,
        allowed: "true or false", doc: "a measure that fired and is back to or under its threshold posts one resolved message",
    },
    {
        key: "alertAfterRuns", host: "ALERT_AFTER_RUNS", type: "integer", default: "1", pattern: `^${INT}$`, min: 1, max: 100,
        allowed: "an integer 1-100", doc: "a measure fires only after this many consecutive runs over its threshold",
    },
    {
        key: "verifyWebhook", host: null, type: "boolean", default: "true", pattern: BOOLEAN, use: "deploy",
        allowed: "true or false",
        doc: "when the webhook is first set or rotated, `pulumi up` posts the connectivity test; a permanent refusal fails that host's webhook resource",
    },
    {
        key: "banIgnoreIps", host: null, type: "names", default: "", pattern: ADDRESS,
        allowed: "a list of IP addresses or CIDRs",
        doc: "addresses the jail never bans, besides loopback and adminCidrs (always ignored)",
    },
    {
        key: "banIncrement", host: null, type: "boolean", default: "false", pattern: BOOLEAN,
        allowed: "true or false", doc: "fail2ban bantime.increment: each new ban of an address lasts twice the previous one, at most 1 week",
    },
    {
        key: "banMaxRetry", host: null, type: "integer", default: "10", pattern: `^${INT}$`, min: 1, max: 1000,
        allowed: "an integer 1-1000", doc: "jail maxretry: matching lines allowed before a ban",
    },
    {
        key: "banFindTime", host: null, type: "duration", default: "1m", pattern: `^(${INT}|(${INT}[smhdw])+)$`, min: 1, max: 31536000,
        allowed: "a duration 1s-365d such as 600, 30s, 10m, 1h30m (units s m h d w)", doc: "jail findtime: window in which matches are counted",
    },
    {
        key: "banBanTime", host: null, type: "duration", default: "10m", pattern: `^(${INT}|(${INT}[smhdw])+)$`, min: 1, max: 31536000,
        allowed: "a duration 1s-365d such as 600, 30s, 10m, 1h30m (units s m h d w)", doc: "jail bantime: length of a ban",
    },
    {
        key: "banAction", host: null, type: "word", default: "", pattern: "^([A-Za-z0-9][A-Za-z0-9._-]{0,63})?$",
        allowed: "empty or a fail2ban action name such as nftables-multiport or iptables.multiport",
        doc: "jail banaction (empty: the distribution's default)",
    },
    {
        key: "nginxAccessLog", host: null, type: "path", default: "/var/log/nginx/access.log", pattern: PATH,
        allowed: "an absolute path of a file", doc: "the access log the jail reads",
    },
    {
        key: "nginxServerConf", host: "NGINX_SERVER_CONF", type: "path", default: "", pattern: OPTIONAL_PATH, install: "web",
        allowed: "empty or an absolute path",
        doc: "site file (or nginx.conf) whose every `server` block of the http context, its own and those of the files it includes, gets the deny include, and so does each of their `location` blocks",
    },
    {
        key: "appProperties", host: "APP_PROPERTIES", type: "path", default: "", pattern: OPTIONAL_PATH, install: "web",
        allowed: "empty or an absolute path",
        doc: "Spring application.properties to set spring.web.resources.add-mappings=false in (a YAML file, application.yml, is refused)",
    },
] as const satisfies readonly SettingRow[];

export type SettingKey = (typeof SETTINGS)[number]["key"];
type Row = (typeof SETTINGS)[number];
type ValueOf<T extends SettingType> = T extends "percent" | "integer" ? number : T extends "names" ? string[]
    : T extends "boolean" ? boolean : string;

/** The validated settings: numbers for numbers, a list for names, text otherwise. */
export type PayloadSettings = { [R in Row as R["key"]]: ValueOf<R["type"]> };

export const SETTING_KEYS: readonly SettingKey[] = SETTINGS.map((r) => r.key);

/** The rows the host's scripts read at run time (or its installer at install time). */
export const HOST_SETTINGS: readonly SettingRow[] = SETTINGS.filter((r) => r.host !== null);

/**
 * Host keys whose value differs per host: written from the host's own entry of
 * hostguard:hosts (its `key` names that field), never a stack setting.
 */
export const PER_HOST_SETTINGS: readonly SettingRow[] = [
    {
        key: "hosts[].name", host: "HOST_NAME", type: "word", default: "", pattern: "^([a-z0-9][a-z0-9-]{0,39})?$",
        allowed: "empty or a host name of hostguard:hosts",
        doc: "the host's name in labelled messages (empty: the kernel's host name)",
    },
];

export function settingRow(key: string): SettingRow {
    const row = (SETTINGS as readonly SettingRow[]).find((r) => r.key === key);
    if (!row) {
        throw new Error(`no setting ${key}`);
    }
    return row;
}

/** Thrown with the stack-config key of the value it refuses. */
export class SettingError extends Error {
    constructor(readonly key: string, readonly reason: string) {
        super(reason);
        this.name = "SettingError";
    }
}

/** Seconds of a duration in the table's form (`90`, `10m`, `1h30m`), as fail2ban counts them. */
export function durationSeconds(text: string): number {
    const unit: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
    if (/^[0-9]+$/.test(text)) {
        return Number(text);
    }
    let total = 0;
    for (const m of text.matchAll(/([0-9]+)([smhdw])/g)) {
        total += Number(m[1]) * unit[m[2]];
    }
    return total;
}

/** The number a text form stands for, in the unit of the row's range. */
function magnitude(row: SettingRow, text: string): number {
    return row.type === "duration" ? durationSeconds(text) : Number(text);
}

/** The row's pattern for JavaScript: `[:cntrl:]` (C locale) spelled as code points. */
export function jsPattern(row: SettingRow): RegExp {
    return new RegExp(row.pattern.replace(/\[:cntrl:\]/g, "\\x00-\\x1f\\x7f"));
}

/** Spaces around a list item that the host ignores (bash's [:space:] in the C locale). */
export function trimName(name: string): string {
    return name.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, "");
}

/** Checks one text form (a single trimmed name for `names`) against the row; returns why not, or null. */
export function refusal(row: SettingRow, text: string): string | null {
    if (!jsPattern(row).test(text)) {
        return `must be ${row.allowed}`;
    }
    if (row.min !== undefined && row.max !== undefined && text !== "") {
        const n = magnitude(row, text);
        if (!(n >= row.min && n <= row.max)) {
            return `must be ${row.allowed}`;
        }
    }
    return null;
}

/** A raw config value as its text form: numbers as JavaScript writes them, strings as given. */
function textOf(key: string, raw: unknown): string {
    if (typeof raw === "string") {
        return raw;
    }
    if (typeof raw === "boolean") {
        return String(raw);
    }
    if (typeof raw === "number" && Number.isFinite(raw)) {
        return String(raw);
    }
    throw new SettingError(key, `must be a string or a number, got ${JSON.stringify(raw)}`);
}

/** Lists arrive as JSON text from Pulumi and as arrays from YAML. */
function listOf(key: string, raw: unknown): string[] {
    let v = raw;
    if (typeof v === "string") {
        try {
            v = JSON.parse(v);
        } catch {
            throw new SettingError(key, "must be a structured value (a YAML list of strings)");
        }
    }
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
        throw new SettingError(key, "must be a list of strings");
    }
    return v as string[];
}

/** Parses a host text form into the typed value (the text is known to be valid). */
function typed(row: SettingRow, text: string): number | string | string[] | boolean {
    switch (row.type) {
        case "percent":
        case "integer":
            return Number(text);
        case "names":
            return text === "" ? [] : text.split(",");
        case "boolean":
            return text === "true";
        default:
            return text;
    }
}

/** The host text form of a typed value. */
export function hostText(key: SettingKey, value: PayloadSettings[SettingKey]): string {
    return Array.isArray(value) ? value.join(",") : String(value);
}

/**
 * Validates one raw value (undefined: the default) and returns its typed value.
 * Throws SettingError naming the key (a list item as `key[i]`).
 */
export function validateSetting(row: SettingRow, raw: unknown): number | string | string[] | boolean {
    if (raw === undefined) {
        return typed(row, row.default);
    }
    if (row.type === "names") {
        return listOf(row.key, raw).map((item, i) => {
            const name = trimName(item);
            const why = refusal(row, name);
            if (why !== null) {
                throw new SettingError(`${row.key}[${i}]`, `${why}, got ${JSON.stringify(name)}`);
            }
            return name;
        });
    }
    const text = textOf(row.key, raw);
    const why = refusal(row, text);
    if (why !== null) {
        throw new SettingError(row.key, `${why}, got ${JSON.stringify(raw)}`);
    }
    return typed(row, text);
}

/** Every setting validated (raw keys without the namespace), defaults applied. */
export function validateSettings(raw: Record<string, unknown>): PayloadSettings {
    const out: Record<string, unknown> = {};
    for (const row of SETTINGS) {
        out[row.key] = validateSetting(row, raw[row.key]);
    }
    const s = out as PayloadSettings;
    if (s.notifyMaxTime > s.notifyBudget) {
        throw new SettingError("notifyMaxTime", "must not exceed hostguard:notifyBudget");
    }
    return s;
}

export const DEFAULT_SETTINGS: PayloadSettings = validateSettings({});

// ---- derived text: the host parser's block and the README tables ----------

export const HOST_BLOCK_BEGIN = "# BEGIN settings table (generated from components/settings.ts by `npm run settings:gen`; do not edit)";
export const HOST_BLOCK_END = "# END settings table";

/** Bash single-quoted literal. */
function sq(text: string): string {
    return `'${text.replace(/'/g, "'\\''")}'`;
}

/** The HG_DEFAULTS / HG_PATTERNS / HG_RANGES block of scripts/lib/common.sh. */
export function renderHostBlock(): string {
    // hg_setting_ok checks a duration's range in seconds (hg_duration_seconds),
    // so a host-read duration row (alertRepeatInterval) has the same rules on
    // both sides; the settings contract test generates its values too.
    const host = [...HOST_SETTINGS, ...PER_HOST_SETTINGS];
    const lines = [
        HOST_BLOCK_BEGIN,
        "# Defaults of every setting; hg_load_settings refuses keys not listed here.",
        "declare -A HG_DEFAULTS=(",
        ...host.map((r) => `  [${r.host}]=${sq(r.default)}`),
        ")",
        "readonly HG_DEFAULTS",
        "# Which values each key accepts, as an extended regex (a list: each name, trimmed).",
        "declare -A HG_PATTERNS=(",
        ...host.map((r) => `  [${r.host}]=${sq(r.pattern)}`),
        ")",
        "readonly HG_PATTERNS",
        "# Keys holding comma-separated lists of names.",
        "declare -A HG_LISTS=(",
        ...host.filter((r) => r.type === "names").map((r) => `  [${r.host}]=1`),
        ")",
        "readonly HG_LISTS",
        "# Inclusive \"min max\" of the numeric keys.",
        "declare -A HG_RANGES=(",
        ...host.filter((r) => r.min !== undefined).map((r) => `  [${r.host}]=${sq(`${r.min} ${r.max}`)}`),
        ")",
        "readonly HG_RANGES",
        HOST_BLOCK_END,
    ];
    return lines.join("\n");
}

export const README_BEGIN = "<!-- BEGIN settings table (generated by `npm run settings:gen` from components/settings.ts) -->";
export const README_END = "<!-- END settings table -->";

function mdDefault(row: SettingRow, onHost = false): string {
    if (row.default === "") {
        return row.type === "names" && !onHost ? "`[]`" : "(empty)";
    }
    return `\`${row.default}\``;
}

/** The settings rows of the repository README's configuration table. */
export function renderConfigReadmeTable(): string {
    return [
        README_BEGIN,
        "| Setting | Default | Allowed | Meaning |",
        "|---|---|---|---|",
        ...SETTINGS.map((r: SettingRow) => `| \`${r.key}\` | ${mdDefault(r)} | ${r.allowed} | ${r.doc}${r.host ? "" : r.use === "deploy" ? " (used by the deploy)" : " (rendered into the jail)"} |`),
        README_END,
    ].join("\n");
}

/** The table of scripts/README.md: the keys of hostguard.conf. */
export function renderHostReadmeTable(): string {
    return [
        README_BEGIN,
        "| Key | Default | Allowed | Meaning |",
        "|---|---|---|---|",
        ...[...HOST_SETTINGS, ...PER_HOST_SETTINGS].map((r) => `| \`${r.host}\` | ${mdDefault(r, true)} | ${r.type === "names" ? "comma-separated container names" : r.allowed} | ${r.doc} (stack config \`${r.key}\`) |`),
        README_END,
    ].join("\n");
}

/** Replaces the text between BEGIN and END (both lines included) in DOC with BLOCK. */
export function replaceBlock(doc: string, begin: string, end: string, block: string): string {
    const i = doc.indexOf(begin);
    const j = doc.indexOf(end);
    if (i < 0 || j < i) {
        throw new Error(`markers not found: ${begin}`);
    }
    return doc.slice(0, i) + block + doc.slice(j + end.length);
}
