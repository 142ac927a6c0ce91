// Stack configuration of the `hostguard` namespace: the typed settings, their
// defaults (from the SPEC) and the one validator that runs before any resource
// is created. Pure: no Pulumi runtime needed, so `tools/render.ts` and the unit
// tests use exactly the same checks as `pulumi preview`.
import * as net from "node:net";
import { DEFAULT_SETTINGS, SETTING_KEYS, SettingError, validateSettings, type PayloadSettings } from "./settings";

export { DEFAULT_SETTINGS, type PayloadSettings };

export const NAMESPACE = "hostguard";

/** Keys whose values are secrets: a validation error names them, never shows them. */
export const SECRET_KEYS = ["webhookUrl", "heartbeatUrl", "sshPrivateKey", "bastionPrivateKey"] as const;

export interface BastionSettings {
    host: string;
    port: number;
    user: string;
    hostKey?: string;
    /** When set (AWS mode), SSH into the hosts is allowed from this group only. */
    securityGroupId?: string;
}

export interface HostSettings {
    /** Short name: used in resource names and the render folder. */
    name: string;
    host: string;
    port: number;
    user: string;
    /** Expected SSH host key (`ssh-ed25519 AAAA...`); required unless insecureAcceptAnyHostKey. */
    hostKey?: string;
    /** Fixed cron minute offset 0-9; when absent a random one is drawn once and kept in state. */
    cronMinute?: number;
    /**
     * EC2 instance (`i-...`) of this host. With a created group its primary network interface gets
     * exactly that group (plus keepSecurityGroupIds); with an adopted one it may carry the group.
     */
    instanceId?: string;
}

export interface HostguardConfig {
    settings: PayloadSettings;
    hosts: HostSettings[];
    bastion?: BastionSettings;
    /** false leaves every AWS resource out (local or non-AWS hosts, end-to-end tests). */
    aws: boolean;
    /** The opt-out: SSH without a host key accepts any server (warned about on every run). */
    insecureAcceptAnyHostKey: boolean;
    vpcId?: string;
    securityGroupId?: string;
    securityGroupName?: string;
    securityGroupDescription?: string;
    /** Instances (or interfaces) outside the stack that may carry the adopted group: they are changed too. */
    sharedSecurityGroupInstances: string[];
    /** Groups kept on a host's interface beside the created group (a load balancer's, ...). */
    keepSecurityGroupIds: string[];
    privateCidrs: string[];
    adminCidrs: string[];
    /** Presence only: the values themselves are read with requireSecret/getSecret. */
    hasWebhookUrl: boolean;
    hasHeartbeatUrl: boolean;
    hasSshPrivateKey: boolean;
    hasBastionPrivateKey: boolean;
}

export const DEFAULT_SSH_USER = "admin";
/**
 * Without a host key @pulumi/command accepts any server (InsecureIgnoreHostKey), so
 * anyone on the network path could pose as it and receive the webhook and every script.
 * A host key is therefore required, unless this loudly named key is set to true.
 */
export const INSECURE_HOST_KEY_OPT_OUT = "insecureAcceptAnyHostKey";
const HOST_KEY_HOWTO = "get it over a trusted path with `ssh-keyscan -t ed25519 HOST` (run from inside the server's network), " +
    "or check it against the fingerprints the instance prints at first boot in its EC2 console output " +
    "(`aws ec2 get-console-output --instance-id i-...`), and set it as `ssh-ed25519 AAAA...`. To deploy without checking " +
    `the server (anyone on the network path could pose as it), set ${NAMESPACE}:${INSECURE_HOST_KEY_OPT_OUT} true`;
export const DEFAULT_PRIVATE_CIDRS = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];
export const DEFAULT_SECURITY_GROUP_DESCRIPTION = "hostguard: HTTPS public, 8080 private, SSH for deployment";

/** Every key the namespace accepts; anything else is a typo and is rejected. */
export const KNOWN_KEYS: readonly string[] = [
    ...SETTING_KEYS,
    "hosts",
    "sshUser",
    "bastion",
    "aws",
    "vpcId",
    "securityGroupId",
    "securityGroupName",
    "securityGroupDescription",
    "sharedSecurityGroupInstances",
    "keepSecurityGroupIds",
    "privateCidrs",
    "adminCidrs",
    INSECURE_HOST_KEY_OPT_OUT,
    ...SECRET_KEYS,
];

export class ConfigError extends Error {
    constructor(readonly key: string, message: string) {
        super(`${NAMESPACE}:${key} ${message}`);
        this.name = "ConfigError";
    }
}

/** Raw config: values as Pulumi hands them over (strings, JSON for objects) or as parsed from the stack YAML. */
export type RawConfig = Record<string, unknown>;

export interface ValidateOptions {
    /** The render tool has no secrets: it only needs them to be declared, not readable. */
    requireSecrets?: boolean;
}

/**
 * Validates the raw config of the namespace (keys without the `hostguard:` prefix)
 * and returns typed settings with defaults applied. Throws ConfigError naming the key.
 * A secret's value never appears in a message.
 */
export function validateConfig(raw: RawConfig, opts: ValidateOptions = {}): HostguardConfig {
    const requireSecrets = opts.requireSecrets ?? true;
    for (const key of Object.keys(raw)) {
        if (!KNOWN_KEYS.includes(key)) {
            throw new ConfigError(key, `is not a known key (known: ${[...KNOWN_KEYS].sort().join(", ")})`);
        }
    }
    const settings = settingsOf(raw);

    const sshUser = word(raw, "sshUser", DEFAULT_SSH_USER, /^[a-z_][a-z0-9_-]{0,31}$/);
    const hosts = hostList(raw, sshUser);
    const bastion = bastionSettings(raw, sshUser);
    const insecureAcceptAnyHostKey = bool(raw, INSECURE_HOST_KEY_OPT_OUT, false);
    if (!insecureAcceptAnyHostKey) {
        const missing = uncheckedHostKeys({ hosts, bastion })[0];
        if (missing) {
            throw new ConfigError(missing.key, `is required: ${HOST_KEY_HOWTO}`);
        }
    }
    const useAws = bool(raw, "aws", true);
    if (!useAws) {
        // Refused rather than ignored: without AWS nothing would attach a group, and a
        // silently dropped instanceId would look like a hardened host that is not.
        const i = hosts.findIndex((h) => h.instanceId !== undefined);
        if (i >= 0) {
            throw new ConfigError(`hosts[${i}].instanceId`, "is only used when hostguard:aws is true (it attaches the created security group); remove it");
        }
    }
    const privateCidrs = cidrList(raw, "privateCidrs", DEFAULT_PRIVATE_CIDRS);
    const adminCidrs = cidrList(raw, "adminCidrs", []);
    adminCidrs.forEach((c, i) => {
        if (isWholeInternet(c)) {
            throw new ConfigError(`adminCidrs[${i}]`, `opens SSH to the whole internet (${c}); list admin networks or use hostguard:bastion`);
        }
    });
    privateCidrs.forEach((c, i) => {
        if (isWholeInternet(c)) {
            throw new ConfigError(`privateCidrs[${i}]`, `must be a private network, not ${c}`);
        }
    });

    const vpcId = optionalWord(raw, "vpcId", /^vpc-[0-9a-f]{8,17}$/);
    const securityGroupId = optionalWord(raw, "securityGroupId", /^sg-[0-9a-f]{8,17}$/);
    const securityGroupName = optionalWord(raw, "securityGroupName", /^[\x20-\x7e]{1,255}$/);
    const securityGroupDescription = optionalWord(raw, "securityGroupDescription", /^[\x20-\x7e]{1,255}$/);
    if (useAws) {
        if (!vpcId) {
            throw new ConfigError("vpcId", "is required when hostguard:aws is true (the group is created or adopted in it)");
        }
        if (adminCidrs.length === 0 && !bastion?.securityGroupId) {
            throw new ConfigError("adminCidrs", "must list at least one CIDR unless hostguard:bastion.securityGroupId is given (SSH is needed to deploy)");
        }
    }
    const sharedSecurityGroupInstances = idList(raw, "sharedSecurityGroupInstances", /^(i|eni)-([0-9a-f]{8}|[0-9a-f]{17})$/, "an instance id (i-...) or a network interface id (eni-...)");
    if (sharedSecurityGroupInstances.length > 0 && !(useAws && securityGroupId)) {
        throw new ConfigError("sharedSecurityGroupInstances", "is only used with hostguard:securityGroupId (it accepts that the adopted group changes these servers too); remove it");
    }
    const keepSecurityGroupIds = idList(raw, "keepSecurityGroupIds", /^sg-([0-9a-f]{8}|[0-9a-f]{17})$/, "a security group id (sg-...)");
    if (keepSecurityGroupIds.length > 0 && (!useAws || securityGroupId || !hosts.some((h) => h.instanceId))) {
        throw new ConfigError("keepSecurityGroupIds", "is only used with a created group and hosts[].instanceId (groups kept on the interface beside it); remove it");
    }

    const hasWebhookUrl = httpsSecret(raw, "webhookUrl", requireSecrets);
    const hasHeartbeatUrl = httpsSecret(raw, "heartbeatUrl", false);
    const hasSshPrivateKey = secretPresent(raw, "sshPrivateKey", requireSecrets, (v) => /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(v), "must be a PEM or OpenSSH private key");
    const hasBastionPrivateKey = secretPresent(raw, "bastionPrivateKey", false, (v) => /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(v), "must be a PEM or OpenSSH private key");

    return {
        settings, hosts, bastion, aws: useAws, insecureAcceptAnyHostKey, vpcId, securityGroupId, securityGroupName, securityGroupDescription,
        sharedSecurityGroupInstances, keepSecurityGroupIds, privateCidrs, adminCidrs, hasWebhookUrl, hasHeartbeatUrl, hasSshPrivateKey, hasBastionPrivateKey,
    };
}

/** The payload settings, by the table of components/settings.ts; a refusal names the key. */
function settingsOf(raw: RawConfig): PayloadSettings {
    for (const key of SETTING_KEYS) {
        scalar(raw, key);
    }
    try {
        const settings = validateSettings(raw);
        settings.banIgnoreIps.forEach((a, i) => {
            if (!isCidr(a) && net.isIP(a) === 0) {
                throw new SettingError(`banIgnoreIps[${i}]`, `must be an IP address or a CIDR block such as 192.0.2.0/24, got ${JSON.stringify(a)}`);
            }
        });
        return settings;
    } catch (e) {
        if (e instanceof SettingError) {
            throw new ConfigError(e.key, e.reason);
        }
        throw e;
    }
}



// ---- secrets -------------------------------------------------------------

/** A value from the stack YAML that is still encrypted (`{secure: ...}`): present, unreadable. */
function isEncrypted(v: unknown): boolean {
    return typeof v === "object" && v !== null && "secure" in v;
}

/** The webhook and the heartbeat URL: https only, checked without ever showing the value. */
function httpsSecret(raw: RawConfig, key: "webhookUrl" | "heartbeatUrl", required: boolean): boolean {
    return secretPresent(raw, key, required, (v) => {
        try {
            const u = new URL(v.trim());
            return u.protocol === "https:" && u.hostname.length > 0 && !/\s/.test(v.trim());
        } catch {
            return false;
        }
    }, "must be an https:// URL (the value is not shown because it is a secret)");
}

function secretPresent(raw: RawConfig, key: string, required: boolean, ok: (v: string) => boolean, what: string): boolean {
    const v = raw[key];
    if (v === undefined || v === "") {
        if (required) {
            throw new ConfigError(key, `is required: set it with \`pulumi config set --secret ${NAMESPACE}:${key} ...\``);
        }
        return false;
    }
    if (isEncrypted(v)) {
        return true;
    }
    if (typeof v !== "string" || !ok(v)) {
        throw new ConfigError(key, what);
    }
    return true;
}

// ---- hosts and bastion ---------------------------------------------------

function hostList(raw: RawConfig, sshUser: string): HostSettings[] {
    const list = structured(raw, "hosts", undefined);
    if (!Array.isArray(list) || list.length === 0) {
        throw new ConfigError("hosts", "must list at least one host ({name, host, port?, user?, hostKey, cronMinute?, instanceId?})");
    }
    const seen = new Set<string>();
    return list.map((h, i) => {
        const key = `hosts[${i}]`;
        if (typeof h !== "object" || h === null || Array.isArray(h)) {
            throw new ConfigError(key, "must be an object {name, host, port?, user?, hostKey, cronMinute?, instanceId?}");
        }
        const o = h as Record<string, unknown>;
        for (const k of Object.keys(o)) {
            if (!["name", "host", "port", "user", "hostKey", "cronMinute", "instanceId"].includes(k)) {
                throw new ConfigError(`${key}.${k}`, "is not a known host field (name, host, port, user, hostKey, cronMinute, instanceId)");
            }
        }
        const name = matches(`${key}.name`, o.name, /^[a-z0-9][a-z0-9-]{0,39}$/, "must be lower-case letters, digits and dashes (it names resources)");
        if (seen.has(name)) {
            throw new ConfigError(`${key}.name`, `repeats the name ${name}`);
        }
        seen.add(name);
        return {
            name,
            host: matches(`${key}.host`, o.host, /^[A-Za-z0-9.:_-]+$/, "must be a host name or IP address"),
            port: o.port === undefined ? 22 : intValue(`${key}.port`, o.port, 1, 65535),
            user: o.user === undefined ? sshUser : matches(`${key}.user`, o.user, /^[a-z_][a-z0-9_-]{0,31}$/, "must be a user name"),
            hostKey: o.hostKey === undefined ? undefined : hostKey(`${key}.hostKey`, o.hostKey),
            // Only present when given, so hosts without it compare equal to before.
            ...(o.cronMinute === undefined ? {} : { cronMinute: intValue(`${key}.cronMinute`, o.cronMinute, 0, 9) }),
            ...(o.instanceId === undefined ? {} : {
                instanceId: matches(`${key}.instanceId`, o.instanceId, /^i-([0-9a-f]{8}|[0-9a-f]{17})$/, "must be an EC2 instance id (i- and 8 or 17 hex digits)"),
            }),
        };
    });
}

function bastionSettings(raw: RawConfig, sshUser: string): BastionSettings | undefined {
    const b = structured(raw, "bastion", undefined);
    if (b === undefined) {
        return undefined;
    }
    if (typeof b !== "object" || b === null || Array.isArray(b)) {
        throw new ConfigError("bastion", "must be an object {host, port?, user?, hostKey, securityGroupId?}");
    }
    const o = b as Record<string, unknown>;
    for (const k of Object.keys(o)) {
        if (!["host", "port", "user", "hostKey", "securityGroupId"].includes(k)) {
            throw new ConfigError(`bastion.${k}`, "is not a known bastion field (host, port, user, hostKey, securityGroupId)");
        }
    }
    return {
        host: matches("bastion.host", o.host, /^[A-Za-z0-9.:_-]+$/, "must be a host name or IP address"),
        port: o.port === undefined ? 22 : intValue("bastion.port", o.port, 1, 65535),
        user: o.user === undefined ? sshUser : matches("bastion.user", o.user, /^[a-z_][a-z0-9_-]{0,31}$/, "must be a user name"),
        hostKey: o.hostKey === undefined ? undefined : hostKey("bastion.hostKey", o.hostKey),
        securityGroupId: o.securityGroupId === undefined ? undefined
            : matches("bastion.securityGroupId", o.securityGroupId, /^sg-[0-9a-f]{8,17}$/, "must be a security group id (sg-...)"),
    };
}

/** The SSH connections that would accept any server: `hosts[i].hostKey` or `bastion.hostKey` (and what they point at). */
export function uncheckedHostKeys(c: Pick<HostguardConfig, "hosts" | "bastion">): Array<{ key: string; target: string }> {
    const out = c.hosts.flatMap((h, i) => (h.hostKey ? [] : [{ key: `hosts[${i}].hostKey`, target: `${h.name} (${h.host})` }]));
    if (c.bastion && !c.bastion.hostKey) {
        out.push({ key: "bastion.hostKey", target: `the bastion (${c.bastion.host})` });
    }
    return out;
}

function hostKey(key: string, v: unknown): string {
    return matches(key, v, /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,3}$/, "must be a public host key line such as `ssh-ed25519 AAAA...`");
}

// ---- scalar helpers ------------------------------------------------------

/** Objects and lists arrive as JSON strings from Pulumi and as values from YAML. */
function structured(raw: RawConfig, key: string, dflt: unknown): unknown {
    const v = raw[key];
    if (v === undefined) {
        return dflt;
    }
    if (typeof v === "string") {
        try {
            return JSON.parse(v);
        } catch {
            throw new ConfigError(key, "must be a structured value (a YAML list or object)");
        }
    }
    return v;
}

function stringList(raw: RawConfig, key: string, dflt: string[]): string[] {
    const v = structured(raw, key, dflt);
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
        throw new ConfigError(key, "must be a list of strings");
    }
    return v as string[];
}

function idList(raw: RawConfig, key: string, re: RegExp, what: string): string[] {
    return stringList(raw, key, []).map((v, i) => matches(`${key}[${i}]`, v, re, `must be ${what}`));
}

function cidrList(raw: RawConfig, key: string, dflt: string[]): string[] {
    return stringList(raw, key, dflt).map((c, i) => {
        if (!isCidr(c)) {
            throw new ConfigError(`${key}[${i}]`, `must be a CIDR block such as 10.0.0.0/16 or 2001:db8::/32, got ${JSON.stringify(c)}`);
        }
        return c;
    });
}

export function isCidr(c: string): boolean {
    const m = /^([^/]+)\/(\d{1,3})$/.exec(c);
    if (!m) {
        return false;
    }
    const family = net.isIP(m[1]);
    const bits = Number(m[2]);
    return (family === 4 && bits <= 32) || (family === 6 && bits <= 128);
}

export function isWholeInternet(c: string): boolean {
    const m = /^([^/]+)\/(\d{1,3})$/.exec(c);
    return m !== null && Number(m[2]) === 0;
}

function scalar(raw: RawConfig, key: string): unknown {
    const v = raw[key];
    if (isEncrypted(v)) {
        throw new ConfigError(key, "must not be a secret");
    }
    return v;
}

function intValue(key: string, v: unknown, min: number, max: number): number {
    const n = typeof v === "number" ? v : typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) {
        throw new ConfigError(key, `must be an integer between ${min} and ${max}, got ${JSON.stringify(v)}`);
    }
    return n;
}

function bool(raw: RawConfig, key: string, dflt: boolean): boolean {
    const v = scalar(raw, key);
    if (v === undefined) {
        return dflt;
    }
    if (v === true || v === "true") {
        return true;
    }
    if (v === false || v === "false") {
        return false;
    }
    throw new ConfigError(key, `must be true or false, got ${JSON.stringify(v)}`);
}

function matches(key: string, v: unknown, re: RegExp, what: string): string {
    if (typeof v !== "string" || !re.test(v)) {
        throw new ConfigError(key, `${what}, got ${JSON.stringify(v)}`);
    }
    return v;
}

function word(raw: RawConfig, key: string, dflt: string, re: RegExp): string {
    const v = scalar(raw, key);
    return v === undefined ? dflt : matches(key, v, re, `must match ${re}`);
}

function optionalWord(raw: RawConfig, key: string, re: RegExp): string | undefined {
    const v = scalar(raw, key);
    return v === undefined || v === "" ? undefined : matches(key, v, re, `must match ${re}`);
}


