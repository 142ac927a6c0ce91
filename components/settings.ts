import { CHAT_FORMATS, PAGERDUTY_REGIONS, ROUTING_KEY_PATTERN } from "./chatFormats";
// The one table of hostguard's settings: for every key its stack-config name,
// its name in the host's `hostguard.conf` (or none when only a rendered file
// uses it), its type, default, allowed values and one line of documentation.
// Everything else is derived from it: the validator (components/config.ts),
// the defaults, the rendered settings file, the host agent's DEFAULTS /
// PATTERNS / RANGES block in scripts/hostguard/settings_table.py and both
// README tables (tools/gen-settings.ts renders and writes those; a unit test
// fails when they differ). Pure: no Pulumi runtime.
//
// A pattern is written once and used thrice, as a POSIX ERE (C locale), by
// JavaScript's RegExp (jsPattern) and by Python's re (tools/gen-settings.ts's pyPattern), so it uses
// only what all read the same: bracket expressions of ASCII ranges, `{m,n}`, groups, `|`,
// `^` and `$`; `[:cntrl:]` inside a bracket is translated for JavaScript.

export type SettingType = "percent" | "integer" | "duration" | "word" | "path" | "names" | "boolean";

/** Which part's install step reads a setting (besides the scripts at run time). */
export type InstallPart = "web" | "monitors";

/** Where a setting that no host script reads takes effect. */
export type SettingUse = "jail" | "deploy" | "proxy";

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
    /**
     * For a row without `host`: rendered into the jail (the default), used by the deploy itself, or
     * (proxy) rendered into the jail, nginx's http-context drop-in and the deny snippet.
     */
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

// ---- value rules shared by stack keys, host fields and the host -----------

/** A host-name label: letters, digits and inner dashes, at most 63. */
const LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
/** Characters RFC 3986 allows in a URL's userinfo, path and query (no quote, space, #, braces or brackets). */
const URL_CHARS = "A-Za-z0-9._~%!$&'()*+,;=:";
const PORT = "([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
/**
 * The one URL rule of the webhook and the heartbeat, unanchored: https only,
 * optional userinfo@, a host name (dot-separated labels) or an [IPv6] literal,
 * an optional port 1-65535, a path and a query of RFC 3986 characters, no
 * fragment. Nothing curl would glob ({ } [ ]), nothing that ends its config
 * line (a quote) or starts a comment (#), no space or control character.
 * Generated into the host agent (URL_RE in hostguard/settings_table.py) for the URL files' one
 * parser (hostguard/urltext.py: `install set-webhook/set-heartbeat` and the notifier).
 */
export const URL_BODY = `https://([${URL_CHARS}-]+@)?(${LABEL}([.]${LABEL})*[.]?|\\[[0-9A-Fa-f:.]+\\])(:${PORT})?(/[${URL_CHARS}@/-]*)?([?][${URL_CHARS}@/?-]*)?`;

export interface ValueRule {
    /** JavaScript pattern (anchored unless the rule says otherwise). */
    readonly pattern: string;
    /** What is allowed, in words: the error texts and the README say this, never the pattern. */
    readonly allowed: string;
}

const HOST_NAME_BODY = "[a-z0-9][a-z0-9-]{0,39}";

/** The rules of the stack keys that are not host settings (and of the webhook and heartbeat URL on the host). */
export const RULES = {
    delivery: { pattern: "^(ssh|ssm)$", allowed: "ssh or ssm" },
    // State Manager's own forms (CreateAssociation); rate(N minutes) at least 30 is checked by components/config.ts.
    fleetSchedule: {
        pattern: "^(rate\\(([1-9][0-9]{0,3}) (minutes|hours|days)\\)|cron\\([0-9A-Za-z*?,/#L -]{1,200}\\))$",
        allowed: "rate(N minutes|hours|days) (at least 30 minutes) or cron(...)",
    },
    fleetMaxConcurrency: { pattern: "^([1-9][0-9]{0,3}|([1-9][0-9]?|100)%)$", allowed: "a number 1-9999 or a percentage 1%-100%" },
    fleetMaxErrors: { pattern: "^([0-9]{1,4}|([0-9]{1,2}|100)%)$", allowed: "a number 0-9999 or a percentage 0%-100%" },
    iamPolicyArn: {
        pattern: "^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:policy/([A-Za-z0-9+=,.@_-]{1,64}/){0,8}[A-Za-z0-9+=,.@_-]{1,128}$",
        allowed: "a customer managed policy's ARN: arn:aws:iam::<12-digit account>:policy/<name>",
    },
    userName: {
        pattern: "^[a-z_][a-z0-9_-]{0,31}$",
        allowed: "a user name: a lower-case letter or _, then at most 31 lower-case letters, digits, _ or -",
    },
    hostName: {
        pattern: `^${HOST_NAME_BODY}$`,
        allowed: "lower-case letters, digits and dashes, at most 40, not starting with a dash (it names resources)",
    },
    address: {
        pattern: "^[A-Za-z0-9.:_-]{1,253}$",
        allowed: "a host name or IP address (letters, digits and . : _ -)",
    },
    vpcId: { pattern: "^vpc-[0-9a-f]{8,17}$", allowed: "a VPC id: vpc- and 8 to 17 lower-case hex digits" },
    securityGroupId: { pattern: "^sg-[0-9a-f]{8,17}$", allowed: "a security group id: sg- and 8 to 17 lower-case hex digits" },
    instanceId: { pattern: "^i-([0-9a-f]{8}|[0-9a-f]{17})$", allowed: "an EC2 instance id: i- and 8 or 17 lower-case hex digits" },
    sharingId: {
        pattern: "^(i|eni)-([0-9a-f]{8}|[0-9a-f]{17})$",
        allowed: "an EC2 instance id (i-) or a network interface id (eni-, for an interface with no instance) and 8 or 17 lower-case hex digits",
    },
    awsText: { pattern: "^[\\x20-\\x7e]{1,255}$", allowed: "1 to 255 printable ASCII characters" },
    cidr: { pattern: "^[0-9A-Fa-f.:]+/[0-9]{1,3}$", allowed: "a CIDR block such as 10.0.0.0/16 or 2001:db8::/32" },
    hostKey: {
        pattern: "^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,2}$",
        allowed: "a public host key `TYPE BASE64` such as `ssh-ed25519 AAAA...` (ssh-ed25519, ecdsa-sha2-nistp256/384/521, or ssh-rsa of at least 2048 bits)",
    },
    /** Not anchored: the key's armour line somewhere in the text. */
    privateKey: { pattern: "-----BEGIN [A-Z ]*PRIVATE KEY-----", allowed: "a PEM or OpenSSH private key" },
    chatFormat: {
        pattern: `^(${CHAT_FORMATS.join("|")})$`,
        allowed: `one of ${CHAT_FORMATS.join(", ")}`,
    },
    routingKey: { pattern: ROUTING_KEY_PATTERN, allowed: "a PagerDuty Events API v2 routing key: 32 letters and digits" },
    pagerdutyRegion: { pattern: `^(${Object.keys(PAGERDUTY_REGIONS).join("|")})$`, allowed: `one of ${Object.keys(PAGERDUTY_REGIONS).join(", ")}` },
    httpsUrl: {
        pattern: `^${URL_BODY}$`,
        allowed: "one https:// URL: a host name or [IPv6] address, an optional port, path and query of RFC 3986 characters; "
            + "no fragment (#), quote, space, { } [ ] | ^ ` < > or control character",
    },
} as const satisfies Record<string, ValueRule>;

export type RuleName = keyof typeof RULES;

export function ruleRegExp(rule: RuleName): RegExp {
    return new RegExp(RULES[rule].pattern);
}

/** A field of a structured stack key (a host of `hosts`, the `bastion`). */
export interface FieldRow {
    readonly name: string;
    /** A rule, or a range of integers. */
    readonly rule?: RuleName;
    readonly min?: number;
    readonly max?: number;
    /** The default in words, when it is not a value (`(required)`, `none`, another key). */
    readonly default?: string;
    /** The default value: the validator uses it, the README renders its words from it. */
    readonly value?: StackValue;
    readonly doc: string;
}

/** A stack key's default value. */
export type StackValue = string | number | boolean | readonly string[];

/** A default in the README's words: the value in backquotes (a list joined by commas, `[]` when empty), else the row's words. */
export function defaultWords(row: { readonly default?: string; readonly value?: StackValue }): string {
    if (row.value === undefined) {
        return row.default ?? "none";
    }
    const v = row.value;
    return Array.isArray(v) ? (v.length === 0 ? "`[]`" : `\`${v.join(", ")}\``) : `\`${String(v)}\``;
}

export type StackKeyType = "objects" | "object" | "text" | "boolean" | "integer" | "list" | "secret";

/** A stack key that is not a host setting: hosts, SSH, AWS and the secrets. */
export interface StackKeyRow {
    readonly key: string;
    readonly type: StackKeyType;
    /** The rule of the value (a list's: each item's). */
    readonly rule?: RuleName;
    /** The default in words, when it is not a value (`(required)`, `none`, `detected`, ...). */
    readonly default?: string;
    /** The default value: components/config.ts's validator uses it (stackDefault), the README renders its words from it. */
    readonly value?: StackValue;
    readonly doc: string;
    /** Set with `pulumi config set --secret`; a plain value is refused. */
    readonly secret?: boolean;
    readonly fields?: readonly FieldRow[];
    /** The range of an integer key. */
    readonly min?: number;
    readonly max?: number;
}

const HOST_KEY_DOC = "the server's SSH host key, required (see SSH host keys)";

export const STACK_KEYS = [
    {
        key: "hosts", type: "objects", default: "(required)",
        doc: "the hosts to harden, at least one; a host's address and port appear once",
        fields: [
            { name: "name", rule: "hostName", default: "(required)", doc: "short name, unique: resource names and the render folder" },
            { name: "host", rule: "address", default: "(required)", doc: "address SSH connects to" },
            { name: "port", min: 1, max: 65535, value: 22, doc: "SSH port" },
            { name: "user", rule: "userName", default: "`sshUser`", doc: "SSH user" },
            { name: "hostKey", rule: "hostKey", default: "(required)", doc: HOST_KEY_DOC },
            {
                name: "instanceId", rule: "instanceId", default: "none",
                doc: "the host's EC2 instance: with a *created* group every network interface of it gets exactly that group (plus `keepSecurityGroupIds`); on both paths preview reads every group on its interfaces and refuses one open to the internet beyond TCP 443; with an adopted group it also marks the instance as the stack's for the shared-group guard; unique among hosts (refused when `aws` is `false`)",
            },
        ],
    },
    { key: "sshUser", type: "text", rule: "userName", value: "admin", doc: "SSH user; `sudo -n` is used when it is not `root`" },
    { key: "sshPrivateKey", type: "secret", rule: "privateKey", secret: true, default: "(required)", doc: "the deployment's SSH key, read from its file (`... < key`)" },
    {
        key: "bastion", type: "object", default: "none", doc: "SSH goes through this host",
        fields: [
            { name: "host", rule: "address", default: "(required)", doc: "address of the bastion" },
            { name: "port", min: 1, max: 65535, value: 22, doc: "SSH port" },
            { name: "user", rule: "userName", default: "`sshUser`", doc: "SSH user" },
            { name: "hostKey", rule: "hostKey", default: "(required)", doc: HOST_KEY_DOC },
            { name: "securityGroupId", rule: "securityGroupId", default: "none", doc: "(AWS) SSH into the hosts is allowed from this group only" },
        ],
    },
    { key: "bastionPrivateKey", type: "secret", rule: "privateKey", secret: true, default: "`sshPrivateKey`", doc: "the bastion's SSH key" },
    {
        key: "insecureAcceptAnyHostKey", type: "boolean", value: false,
        doc: "`true` lets hosts and bastion go without `hostKey` (any server accepted); warned about on every run",
    },
    { key: "webhookUrl", type: "secret", rule: "httpsUrl", secret: true, default: "(required unless `pagerdutyRoutingKey`)", doc: "the chat webhook every alert is posted to" },
    {
        key: "chatFormat", type: "text", rule: "chatFormat", default: "detected",
        doc: "what the webhook speaks (see Alert destinations); unset: detected from the webhook's host (Slack, Teams Workflows, Google Chat, Discord), else `slack`, which Mattermost and Rocket.Chat also take; one that contradicts a known host is refused",
    },
    {
        key: "pagerdutyRoutingKey", type: "secret", rule: "routingKey", secret: true, default: "none",
        doc: "PagerDuty instead of a webhook: the routing (integration) key of an Events API v2 integration; implies `chatFormat` `pagerduty`, `webhookUrl` stays unset",
    },
    { key: "pagerdutyRegion", type: "text", rule: "pagerdutyRegion", value: "us", doc: "`eu` for an EU PagerDuty account (events.eu.pagerduty.com); only with `pagerdutyRoutingKey`" },
    {
        key: "heartbeatUrl", type: "secret", rule: "httpsUrl", secret: true, default: "none",
        doc: "a dead man's switch (a healthchecks-style ping URL) requested after each monitor run that completed and left nothing undelivered; kept like the webhook (`/etc/hostguard/heartbeat.conf`, 0600)",
    },
    {
        key: "delivery", type: "text", rule: "delivery", value: "ssh",
        doc: "`ssh`: each host of `hosts` is reached over SSH from where `pulumi up` runs; `ssm`: no `hosts`, a fleet found by the tag `hostguard-stack` gets the payload from S3 through Systems Manager State Manager (docs/fleets.md)",
    },
    {
        key: "fleetSchedule", type: "text", rule: "fleetSchedule", value: "rate(30 minutes)",
        doc: "(`delivery: ssm`) how often State Manager applies the payload to every tagged instance: `rate(N minutes|hours|days)` (N at least 30 for minutes) or `cron(...)`; a new instance gets it when it joins",
    },
    {
        key: "fleetMaxConcurrency", type: "text", rule: "fleetMaxConcurrency", value: "10%",
        doc: "(`delivery: ssm`) instances that run at once: a number 1-9999 or a percentage 1%-100%",
    },
    {
        key: "fleetMaxErrors", type: "text", rule: "fleetMaxErrors", value: "0",
        doc: "(`delivery: ssm`) failed instances after which a run stops sending to more: a number 0-9999 or a percentage 0%-100%",
    },
    {
        key: "fleetRunsExpireDays", type: "integer", min: 1, max: 3650, value: 30,
        doc: "(`delivery: ssm`) days after which the bucket's lifecycle rule deletes a run's output under `runs/` (every host writes two objects per run)",
    },
    {
        key: "fleetPermissionsBoundary", type: "text", rule: "iamPolicyArn", default: "(required with `delivery: ssm`)",
        doc: "(`delivery: ssm`) the ARN of the permissions boundary an IAM administrator created once (docs/aws.md, Fleet path): the fleet's host role is created with it, and the deployer's policy lets roles be created or changed only with it",
    },
    {
        key: "cronMinute", type: "integer", min: 0, max: 9, default: "derived on each host",
        doc: "pins every host's monitors to this minute (second 0); without it each host waits its own offset (0-599 s, derived from its instance id) after each 10-minute mark",
    },
    { key: "aws", type: "boolean", value: true, doc: "`false` leaves the security group out (non-AWS or test hosts)" },
    { key: "vpcId", type: "text", rule: "vpcId", default: "(required when `aws`)", doc: "VPC of the group" },
    { key: "securityGroupId", type: "text", rule: "securityGroupId", default: "none", doc: "adopt this existing group instead of creating one: its inbound rules become exactly hostguard's, the old ones are put back on destroy (see The security group)" },
    { key: "securityGroupName", type: "text", rule: "awsText", default: "auto name", doc: "the created group's name; with `securityGroupId` accepted for older stacks and not needed (an adopted group's rules are reconciled, not imported)" },
    {
        key: "securityGroupDescription", type: "text", rule: "awsText", value: "hostguard: HTTPS public, 8080 private, SSH for deployment",
        doc: "the created group's description; with `securityGroupId` accepted for older stacks and not needed",
    },
    {
        key: "sharedSecurityGroupInstances", type: "list", rule: "sharingId", value: [],
        doc: "instances (or interfaces) outside the stack that carry the adopted group and are changed with it; preview refuses a shared group until they are listed",
    },
    {
        key: "keepSecurityGroupIds", type: "list", rule: "securityGroupId", value: [],
        doc: "security groups kept on a host's interface beside the created group (a load balancer's, ...); the others are taken off, and put back on destroy",
    },
    {
        key: "keepSecurityGroupsLimit", type: "integer", min: 1, max: 16, value: 5,
        doc: "security groups one network interface may carry (EC2's default quota is 5; raise it only if your account's quota is higher): hostguard's group plus `keepSecurityGroupIds` must fit",
    },
    {
        key: "privateCidrs", type: "list", rule: "cidr", value: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"],
        doc: "may reach 8080; each must lie inside a private range (RFC 1918 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16; RFC 6598 100.64.0.0/10; IPv6 ULA fc00::/7) unless `privateCidrsAllowPublic` is true; no host bits (`10.0.0.0/8`, not `10.0.0.1/8`)",
    },
    {
        key: "privateCidrsAllowPublic", type: "boolean", value: false,
        doc: "`true` lets `privateCidrs` hold public ranges (a network that really uses public addresses inside); they are then held to at most a /16 of public IPv4 and a /32 of public IPv6 together, as `adminCidrs` are",
    },
    {
        key: "adminCidrs", type: "list", rule: "cidr", value: [],
        doc: "may reach 22; together at most a /16 of public IPv4 and a /32 of public IPv6 (private ranges do not count); no host bits; required unless `bastion.securityGroupId` is set (with `delivery: ssm` optional: no SSH rule without it)",
    },
] as const satisfies readonly StackKeyRow[];

export type StackKey = (typeof STACK_KEYS)[number]["key"];

/** The default value of KEY (the row's `value`); throws for a key whose default is not a value. */
export function stackDefault<T extends StackValue>(key: StackKey): T {
    const v = stackKeyRow(key).value;
    if (v === undefined) {
        throw new Error(`stack key ${key} has no default value`);
    }
    return v as T;
}

export function stackKeyRow(key: StackKey): StackKeyRow {
    return (STACK_KEYS as readonly StackKeyRow[]).find((r) => r.key === key)!;
}

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
        key: "containerMonitor", host: "CONTAINER_MONITOR", type: "boolean", default: "true", pattern: BOOLEAN, install: "monitors",
        allowed: "true or false",
        doc: "`false`: the container monitor is not scheduled (its script is still installed) and the monitors part does not need the container runtime; the host monitor runs as usual",
    },
    {
        key: "containerRuntime", host: "CONTAINER_RUNTIME", type: "word", default: "docker", install: "monitors",
        pattern: `^([A-Za-z0-9_][A-Za-z0-9._-]{0,63}|(${SEGMENT})+)$`,
        allowed: "a command name or an absolute path", doc: "the container runtime command",
    },
    {
        key: "containerRuntimeTimeout", host: "CONTAINER_RUNTIME_TIMEOUT", type: "integer", default: "60", pattern: `^${INT}$`, min: 1, max: 300,
        allowed: "an integer 1-300",
        doc: "seconds one call of the container runtime may take (a hung runtime alerts instead of stopping the monitor)",
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
        allowed: "an integer 1-300, at most notifyBudget", doc: "seconds per delivery attempt (the whole HTTPS exchange of one post)",
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
        allowed: "an integer 1-100000", doc: "messages kept per queue at most (monitor alerts, ban-tool messages); over it the oldest ban-tool messages are dropped and counted, the oldest alerts merged into one (never dropped)",
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
        doc: "a measure that stays over its threshold posts again at most once per this duration (0: every run)",
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
        doc: "when the webhook is first set or rotated, `pulumi up` posts the connectivity test; a refusal fails that host's webhook resource and keeps the old webhook, and so does a \"try later\" once the host has one",
    },
    {
        key: "banIgnoreIps", host: null, type: "names", default: "", pattern: ADDRESS,
        allowed: "a list of IP addresses or CIDRs, together at most a /16 of public IPv4 and a /32 of public IPv6 (private ranges do not count)",
        doc: "addresses the jail never bans, besides loopback and adminCidrs (always ignored)",
    },
    {
        key: "trustedProxies", host: null, type: "names", default: "", pattern: ADDRESS, use: "proxy",
        allowed: "a list of IP addresses or CIDRs (v4 and v6), together at most a /16 of public IPv4 and a /32 of public IPv6 (private ranges do not count)",
        doc: "load balancers or proxies in front of nginx (see Behind a load balancer): nginx takes the client's address from their X-Forwarded-For, "
            + "a ban also refuses the client at nginx (403), and the jail never bans them; empty: neither",
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
        allowed: "empty or a file nginx reads: a *.conf file under /etc/nginx/ or a site file in /etc/nginx/sites-*/ (an absolute path)",
        doc: "site file (or nginx.conf) whose every `server` block of the http context, its own and those of the files it includes, gets the deny include, and so does each of their `location` blocks",
    },
    {
        key: "appProperties", host: "APP_PROPERTIES", type: "path", default: "", pattern: OPTIONAL_PATH, install: "web",
        allowed: "empty or a Spring configuration file, *.properties, *.yml or *.yaml (an absolute path), outside /etc, /usr, /bin, /sbin, /lib*, /boot, /proc, /sys, /dev, /root and /run",
        doc: "Spring application.properties or application.yml to end with a document setting spring.web.resources.add-mappings=false",
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
        key: "hosts[].name", host: "HOST_NAME", type: "word", default: "", pattern: `^(${HOST_NAME_BODY})?$`,
        allowed: "empty or a host name",
        doc: "the host's name in labelled messages (empty: the kernel's host name); the Pulumi program leaves it empty, so every host of a stack receives the same bundles",
    },
];

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

/** Why a text is not an absolute path of plain segments, in words (for a path row's refusal). */
function pathReason(text: string): string {
    if (/[\x00-\x1f\x7f]/.test(text)) {
        return "it holds a control character";
    }
    if (/\s/.test(text)) {
        return "it holds a space (the host reads the path as one word, and a space would split it)";
    }
    if (!text.startsWith("/")) {
        return "it does not start with /";
    }
    if (text.endsWith("/")) {
        return "it ends with / (a directory); name the file";
    }
    if (text.split("/").some((seg, i) => i > 0 && (seg === "" || seg === "." || seg === ".."))) {
        return "it has an empty, . or .. segment; write the plain path";
    }
    return "only letters, digits and . _ - are allowed in a segment, which must not start with - or two dots";
}

/** Checks one text form (a single trimmed name for `names`) against the row; returns why not, or null. */
export function refusal(row: SettingRow, text: string): string | null {
    if (!jsPattern(row).test(text)) {
        return row.type === "path" && text !== "" ? `must be ${row.allowed}: ${pathReason(text)}` : `must be ${row.allowed}`;
    }
    if (row.min !== undefined && row.max !== undefined && text !== "") {
        const n = magnitude(row, text);
        if (!(n >= row.min && n <= row.max)) {
            return `must be ${row.allowed}`;
        }
    }
    return null;
}

/** Directories no application's configuration file lives in; appProperties there is refused. */
export const SYSTEM_DIRS = ["/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/proc", "/sys", "/dev", "/root", "/run", "/var/lib/hostguard"];

/**
 * Checks the pattern cannot make, on a value the pattern accepts: which files
 * the installer may edit. Preview applies them; the host's parser does not
 * (the settings contract test knows this list). Returns why not, or null.
 */
export function semanticRefusal(key: string, text: string): string | null {
    if (text === "") {
        return null;
    }
    if (key === "appProperties") {
        if (!/\.(properties|ya?ml)$/.test(text)) {
            return `must be a Spring configuration file ending in .properties, .yml or .yaml, got ${JSON.stringify(text)}`;
        }
        const dir = SYSTEM_DIRS.find((d) => text.startsWith(`${d}/`));
        if (dir) {
            return `must be outside the system directory ${dir} (the installer appends a document to it), got ${JSON.stringify(text)}`;
        }
    }
    if (key === "nginxServerConf") {
        if (!text.startsWith("/etc/nginx/") || !(text.endsWith(".conf") || /^\/etc\/nginx\/sites-[a-z]+\/[^/]+$/.test(text))) {
            return "must be a file nginx reads: a *.conf file under /etc/nginx/ (such as /etc/nginx/nginx.conf or /etc/nginx/conf.d/app.conf) "
                + `or a site file in /etc/nginx/sites-available/ or sites-enabled/, got ${JSON.stringify(text)}`;
        }
    }
    return null;
}

/** Values the rules accept but that are surely a mistake: one line each, naming the key. */
export function settingWarnings(s: PayloadSettings): string[] {
    const out: string[] = [];
    for (const key of ["cpuThreshold", "memoryThreshold", "diskThreshold"] as const) {
        if (s[key] === 0) {
            out.push(`hostguard:${key} is 0: it fires on every run (a measure is never at or below 0)`);
        } else if (s[key] === 100) {
            out.push(`hostguard:${key} is 100: it can never fire (it fires only above the threshold)`);
        }
    }
    if (s.nginxServerConf === "") {
        out.push("hostguard:nginxServerConf is empty: the nginx deny rule (403 for .env, .git, .bak, ...) is installed but no server block includes it, "
            + "so nginx still serves those files; set it to the site file that serves the app (such as /etc/nginx/sites-available/default)");
    }
    if (s.appProperties === "") {
        out.push("hostguard:appProperties is empty: the Spring property spring.web.resources.add-mappings=false is set nowhere, "
            + "so the app keeps serving its static files itself; set it to the app's application.properties or application.yml");
    }
    const repeat = durationSeconds(s.alertRepeatInterval);
    if (repeat > 0 && repeat < MONITOR_INTERVAL_SECONDS) {
        out.push(`hostguard:alertRepeatInterval is ${s.alertRepeatInterval}, shorter than the monitors' ${MONITOR_INTERVAL_SECONDS / 60} minutes between runs: `
            + "it changes nothing (every run posts); use 0 or at least 10m");
    }
    return out;
}

/** Seconds between two monitor runs (the cron line runs them every 10 minutes). */
export const MONITOR_INTERVAL_SECONDS = 600;

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

// ---- the value coercers (these settings' and components/config.ts's stack keys') ----

/** Objects and lists arrive as JSON text from Pulumi and as values from YAML; WHAT names the shape in the refusal. */
export function structuredValue(key: string, raw: unknown, what = "a YAML list or object"): unknown {
    if (typeof raw !== "string") {
        return raw;
    }
    try {
        return JSON.parse(raw);
    } catch {
        throw new SettingError(key, `must be a structured value (${what})`);
    }
}

/** A list of strings, as JSON text or as a YAML list. */
export function stringList(key: string, raw: unknown, what?: string): string[] {
    const v = structuredValue(key, raw, what);
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
        throw new SettingError(key, "must be a list of strings");
    }
    return v as string[];
}

/** An integer in [MIN, MAX], given as a number or its decimal text. */
export function integerIn(key: string, v: unknown, min: number, max: number): number {
    const n = typeof v === "number" ? v : typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) {
        throw new SettingError(key, `must be an integer between ${min} and ${max}, got ${JSON.stringify(v)}`);
    }
    return n;
}

/** true or false, given as a boolean or its text. */
export function booleanOf(key: string, v: unknown): boolean {
    if (v === true || v === "true") {
        return true;
    }
    if (v === false || v === "false") {
        return false;
    }
    throw new SettingError(key, `must be true or false, got ${JSON.stringify(v)}`);
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
export function hostText(value: PayloadSettings[SettingKey]): string {
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
        return stringList(row.key, raw, "a YAML list of strings").map((item, i) => {
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
    for (const key of ["appProperties", "nginxServerConf"] as const) {
        const why = semanticRefusal(key, s[key]);
        if (why !== null) {
            throw new SettingError(key, why);
        }
    }
    if (s.notifyMaxTime > s.notifyBudget) {
        throw new SettingError("notifyMaxTime", "must not exceed hostguard:notifyBudget");
    }
    return s;
}

export const DEFAULT_SETTINGS: PayloadSettings = validateSettings({});
