// Stack configuration of the `hostguard` namespace: the typed settings and the
// one validator that runs before any resource is created, as a list of named
// checks. Every default, rule and value coercer is components/settings.ts's.
// Pure: no Pulumi runtime needed, so `tools/render.ts` and the unit tests use
// exactly the same checks as `pulumi preview`.
import * as net from "node:net";
import { ChatFormatError, resolveChatFormat, type ChatFormat, type PagerdutyRegion } from "./chatFormats";
import { addressKey, blockText, hostBitsFix, isCidr, isPrivateBlock, isWholeInternet, overlaps, parseBlock, PRIVATE_RANGES, widePublicReason } from "./cidr";
import { hostKeyRefusal } from "./hostKey";
import {
    booleanOf, DEFAULT_SETTINGS, integerIn, RULES, ruleRegExp, SETTING_KEYS, SettingError, settingWarnings, STACK_KEYS, stackDefault, stackKeyRow,
    stringList, structuredValue, validateSettings,
    type PayloadSettings, type RuleName, type StackKey, type StackKeyRow,
} from "./settings";

export { DEFAULT_SETTINGS, type PayloadSettings };

export const NAMESPACE = "hostguard";

export interface BastionSettings {
    host: string;
    port: number;
    user: string;
    hostKey?: string;
    /** When set (AWS mode), SSH into the hosts is allowed from this group only. */
    securityGroupId?: string;
}

/** One entry of hostguard:hosts: the SSH target and its own schedule (not a setting read on the host). */
export interface TargetHost {
    /** Short name: used in resource names and the render folder. */
    name: string;
    host: string;
    port: number;
    user: string;
    /** Expected SSH host key (`ssh-ed25519 AAAA...`); required unless insecureAcceptAnyHostKey. */
    hostKey?: string;
    /**
     * EC2 instance (`i-...`) of this host. With a created group every network interface of it gets
     * exactly that group (plus keepSecurityGroupIds); with an adopted one it may carry the group.
     */
    instanceId?: string;
}

export interface HostguardConfig {
    settings: PayloadSettings;
    hosts: TargetHost[];
    /** hostguard:delivery: `ssh` (the hosts, over SSH) or `ssm` (a tagged fleet, through State Manager: components/fleet.ts). */
    delivery: "ssh" | "ssm";
    /** delivery ssm: the association's schedule and rate control. */
    fleet?: FleetSettings;
    /** hostguard:cronMinute: every host's monitors on this minute; absent: each host derives its offset. */
    cronMinute?: number;
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
    /** Groups one interface may carry (EC2's quota); hostguard's plus the kept ones must fit. */
    keepSecurityGroupsLimit: number;
    privateCidrs: string[];
    /** The opt-in: privateCidrs may hold public ranges. */
    privateCidrsAllowPublic: boolean;
    adminCidrs: string[];
    /** Legal values that are surely a mistake, one line each naming the key: printed by preview and render. */
    warnings: string[];
    /** Values still the example stacks' placeholders (PLACEHOLDER): render says so, preview refuses the stack. */
    placeholders: Placeholder[];
    /**
     * The destination's format: hostguard:chatFormat, else detected from the webhook's host (else slack);
     * undefined only when the URL could not be read here (render): the deploy detects it then.
     */
    chatFormat?: ChatFormat;
    /** PagerDuty's region (with pagerdutyRoutingKey). */
    pagerdutyRegion: PagerdutyRegion;
    /** Presence only: the values themselves are read with requireSecret/getSecret. */
    hasWebhookUrl: boolean;
    hasPagerdutyRoutingKey: boolean;
    hasHeartbeatUrl: boolean;
    hasSshPrivateKey: boolean;
    hasBastionPrivateKey: boolean;
}

/** The State Manager association's schedule and rate control, and how long its outputs stay (delivery ssm). */
export interface FleetSettings {
    schedule: string;
    maxConcurrency: string;
    maxErrors: string;
    /** Days until the bucket's lifecycle rule deletes an object under runs/. */
    runsExpireDays: number;
    /** The host role's permissions boundary (an ARN an administrator created: docs/aws.md, Fleet path). */
    permissionsBoundary: string;
}

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
// The defaults are the typed values of components/settings.ts's STACK_KEYS (the README's words are rendered from them).
export const DEFAULT_PRIVATE_CIDRS: readonly string[] = stackDefault<readonly string[]>("privateCidrs");
export const DEFAULT_SECURITY_GROUP_DESCRIPTION = stackDefault<string>("securityGroupDescription");

/** Every key the namespace accepts (both tables); anything else is a typo and is refused, naming the closest. */
export const KNOWN_KEYS: readonly string[] = [...SETTING_KEYS, ...STACK_KEYS.map((r) => r.key)];

/** Keys whose values are secrets: set with `pulumi config set --secret`, never shown in a message. */
export const SECRET_KEYS: readonly string[] = (STACK_KEYS as readonly StackKeyRow[]).filter((r) => r.secret).map((r) => r.key);

export class ConfigError extends Error {
    /** KEY is named as `hostguard:KEY`; a key of another namespace passes its own prefix (or ""). */
    constructor(readonly key: string, message: string, prefix = `${NAMESPACE}:`) {
        super(`${prefix}${key} ${message}`);
        this.name = "ConfigError";
    }
}

/** Raw config: values as Pulumi hands them over (strings, JSON for objects) or as parsed from the stack YAML. */
export type RawConfig = Record<string, unknown>;

export interface ValidateOptions {
    /** The render tool has no secrets: it only needs them to be declared, not readable. */
    requireSecrets?: boolean;
    /**
     * The keys the source marks secret (Pulumi's secret config keys). A secret key
     * whose value is neither `{secure: ...}` nor listed here was set in plain text
     * and is refused. Undefined: the source cannot tell (then a warning says so).
     */
    secretKeys?: readonly string[];
}

// ---- typos --------------------------------------------------------------

/** Optimal string alignment distance (edits, and a swap of neighbours counts one). */
export function editDistance(a: string, b: string): number {
    const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
    for (let i = 1; i <= a.length; i++) {
        for (let j = 1; j <= b.length; j++) {
            const cost = a[i - 1] === b[j - 1] ? 0 : 1;
            d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
                d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.length][b.length];
}

/** The candidate closest to WORD (case-insensitive edits). */
export function closest(word: string, candidates: readonly string[]): string {
    const w = word.toLowerCase();
    return [...candidates].sort((x, y) => editDistance(w, x.toLowerCase()) - editDistance(w, y.toLowerCase()))[0];
}

/** True when NS is not `hostguard` but surely meant it: case, separators, or one or two edits. */
export function isNamespaceTypo(ns: string): boolean {
    if (ns === NAMESPACE) {
        return false;
    }
    const plain = ns.toLowerCase().replace(/[-_. ]/g, "");
    return plain === NAMESPACE || editDistance(plain, NAMESPACE) <= 2;
}

/**
 * Refuses a config key whose namespace is a typo of `hostguard` (it would be
 * ignored, and its setting silently left at the default). KEYS are the stack's
 * full keys (`aws:region`, `hostgaurd:cpuThreshold`); other namespaces pass.
 */
export function refuseNamespaceTypos(keys: readonly string[]): void {
    for (const full of keys) {
        const i = full.indexOf(":");
        const ns = i < 0 ? "" : full.slice(0, i);
        if (i > 0 && isNamespaceTypo(ns)) {
            const name = full.slice(i + 1);
            const known = KNOWN_KEYS.includes(name) ? name : closest(name, KNOWN_KEYS);
            throw new ConfigError(full, `is not in the ${NAMESPACE} namespace and would be ignored: did you mean ${NAMESPACE}:${known}?`, "");
        }
    }
}

function unknownKeyError(key: string): ConfigError {
    return new ConfigError(key, `is not a known key: did you mean ${NAMESPACE}:${closest(key, KNOWN_KEYS)}? (docs/configuration.md lists every key)`);
}

/**
 * Validates the raw config of the namespace (keys without the `hostguard:` prefix)
 * and returns typed settings with defaults applied. Throws ConfigError naming the key.
 * A secret's value never appears in a message. The rules are the rows of
 * components/settings.ts (SETTINGS and STACK_KEYS); the checks below run in this order.
 */
export function validateConfig(raw: RawConfig, opts: ValidateOptions = {}): HostguardConfig {
    try {
        return checkedConfig(raw, opts);
    } catch (e) {
        // The coercers of components/settings.ts name the key; here it gets the namespace.
        throw e instanceof SettingError ? new ConfigError(e.key, e.reason) : e;
    }
}

function checkedConfig(raw: RawConfig, opts: ValidateOptions): HostguardConfig {
    refuseUnknownKeys(raw);
    const warnings: string[] = [];
    const placeholders = placeholdersOf(raw);
    warnings.push(...plainSecrets(raw, opts.secretKeys));
    const settings = settingsOf(raw);
    warnings.push(...settingWarnings(settings), ...overlapWarnings("banIgnoreIps", settings.banIgnoreIps),
        ...overlapWarnings("trustedProxies", settings.trustedProxies));

    const sshUser = textOrDefault(raw, "sshUser");
    const delivery = deliveryOf(raw);
    const fleet = delivery === "ssm" ? fleetSettings(raw) : undefined;
    if (delivery === "ssh") {
        refuseFleetKeysWithSsh(raw);
    } else {
        refuseSshKeysWithFleet(raw);
        refuseFleetWithoutAws(stackBool(raw, "aws"));
        refuseAdoptedGroupWithFleet(raw);
    }
    const hosts = delivery === "ssm" ? [] : hostList(raw, sshUser);
    const cronMinute = stackInteger(raw, "cronMinute");
    const bastion = bastionSettings(raw, sshUser);
    const insecureAcceptAnyHostKey = stackBool(raw, INSECURE_HOST_KEY_OPT_OUT);
    refuseUncheckedHostKeys({ hosts, bastion, insecureAcceptAnyHostKey });
    const useAws = stackBool(raw, "aws");
    refuseInstanceIdWithoutAws({ hosts, aws: useAws });
    const privateCidrsAllowPublic = stackBool(raw, "privateCidrsAllowPublic");
    const privateCidrs = addressList(raw, "privateCidrs", warnings, {
        whole: (c) => `must be a private network, not ${c}`, wide: "must be private networks (they may reach port 8080)",
        privateOnly: !privateCidrsAllowPublic,
    });
    const adminCidrs = addressList(raw, "adminCidrs", warnings, {
        whole: (c) => `opens SSH to the whole internet (${c}); list admin networks or use hostguard:bastion`,
        wide: "open SSH to too much of the internet; list admin networks or use hostguard:bastion",
    });

    const groups = {
        hosts, delivery, bastion, aws: useAws, adminCidrs, settings,
        vpcId: text(raw, "vpcId"),
        securityGroupId: text(raw, "securityGroupId"),
        securityGroupName: text(raw, "securityGroupName"),
        securityGroupDescription: text(raw, "securityGroupDescription"),
        sharedSecurityGroupInstances: idList(raw, "sharedSecurityGroupInstances"),
        keepSecurityGroupIds: idList(raw, "keepSecurityGroupIds"),
        keepSecurityGroupsLimit: stackInteger(raw, "keepSecurityGroupsLimit")!,
    };
    refuseRepeatedKeptGroups(groups);
    refuseTooManyKeptGroups(groups);
    refuseAwsWithoutVpc(groups);
    refuseAwsWithoutSshSource(groups);
    refuseSharedWithoutAdopted(groups);
    refuseKeptWithoutCreated(groups);
    warnings.push(...loadBalancerWarnings(groups), ...attachWarnings(groups));

    const hasPagerdutyRoutingKey = secretPresent(raw, "pagerdutyRoutingKey", false);
    const requireSecrets = opts.requireSecrets ?? true;
    const hasWebhookUrl = secretPresent(raw, "webhookUrl", requireSecrets && !hasPagerdutyRoutingKey);
    const { chatFormat, pagerdutyRegion } = destination(raw, hasWebhookUrl, hasPagerdutyRoutingKey);
    refusePagerdutyWithoutResolved({ chatFormat, settings });
    const hasHeartbeatUrl = secretPresent(raw, "heartbeatUrl", false);
    const hasSshPrivateKey = secretPresent(raw, "sshPrivateKey", requireSecrets && delivery === "ssh");
    const hasBastionPrivateKey = secretPresent(raw, "bastionPrivateKey", false);

    return {
        ...groups, ...(fleet === undefined ? {} : { fleet }), ...(cronMinute === undefined ? {} : { cronMinute }), insecureAcceptAnyHostKey,
        privateCidrs, privateCidrsAllowPublic, hasWebhookUrl, hasHeartbeatUrl, hasSshPrivateKey,
        hasBastionPrivateKey, warnings, placeholders, chatFormat, pagerdutyRegion, hasPagerdutyRoutingKey,
    };
}

// ---- the checks (each one concern; each refusal names the key and the fix) ----

/** Every key must be one of the two tables' (a typo would leave its setting at the default). */
export function refuseUnknownKeys(raw: RawConfig): void {
    const unknown = Object.keys(raw).find((key) => !KNOWN_KEYS.includes(key));
    if (unknown !== undefined) {
        throw unknownKeyError(unknown);
    }
}

/** The fleet's keys have nothing to do with delivery ssh. */
export function refuseFleetKeysWithSsh(raw: RawConfig): void {
    const set = (["fleetSchedule", "fleetMaxConcurrency", "fleetMaxErrors", "fleetRunsExpireDays", "fleetPermissionsBoundary"] as const).find((k) => raw[k] !== undefined);
    if (set !== undefined) {
        throw new ConfigError(set, `is only used with ${NAMESPACE}:delivery ssm; remove it`);
    }
}

/** State Manager runs an association at most every 30 minutes. */
export function refuseShortFleetRate(schedule: string): void {
    const rate = /^rate\((\d+) minutes\)$/.exec(schedule);
    if (rate && Number(rate[1]) < 30) {
        throw new ConfigError("fleetSchedule", `must be at least rate(30 minutes) (State Manager's shortest rate), got ${schedule}`);
    }
}

/** banIgnoreIps and trustedProxies: each an address or block, together within the public limit (components/cidr.ts). */
export function refuseBadNeverBanned(settings: Pick<PayloadSettings, "banIgnoreIps" | "trustedProxies">): void {
    const lists = [
        { key: "banIgnoreIps", list: settings.banIgnoreIps, what: "the jail would never ban them" },
        { key: "trustedProxies", list: settings.trustedProxies, what: "nginx would take any of them at its word for the client's address, and the jail would never ban them" },
    ] as const;
    for (const { key, list, what } of lists) {
        list.forEach((a, i) => {
            if (!isCidr(a) && net.isIP(a) === 0) {
                throw new ConfigError(`${key}[${i}]`, `must be an IP address or a CIDR block such as 192.0.2.0/24, got ${JSON.stringify(a)}`);
            }
        });
        const wide = widePublicReason(list);
        if (wide !== null) {
            throw new ConfigError(key, `${wide}: ${what}`);
        }
    }
}

/** delivery ssm reaches the fleet without SSH: the SSH keys have nothing to do. */
export function refuseSshKeysWithFleet(raw: RawConfig): void {
    for (const key of ["hosts", "sshPrivateKey", "bastion", "bastionPrivateKey", "cronMinute"]) {
        if (raw[key] !== undefined) {
            throw new ConfigError(key, `is not used with ${NAMESPACE}:delivery ssm (State Manager finds the fleet by its tag hostguard-stack and reaches it without SSH): `
                + `remove ${NAMESPACE}:${key}, or set ${NAMESPACE}:delivery ssh`);
        }
    }
}

/** delivery ssm is made of AWS resources. */
export function refuseFleetWithoutAws(aws: boolean): void {
    if (!aws) {
        throw new ConfigError("aws", `must be true with ${NAMESPACE}:delivery ssm (the bucket, parameter, role and association are AWS resources)`);
    }
}

/**
 * The fleet's group is the created one, named by its launch template: an adopted group's instances
 * must be hosts of the stack, which a fleet's are not (they come and go with no pulumi up).
 */
export function refuseAdoptedGroupWithFleet(raw: RawConfig): void {
    for (const key of ["securityGroupId", "keepSecurityGroupIds", "sharedSecurityGroupInstances"]) {
        if (raw[key] !== undefined) {
            throw new ConfigError(key, `is not used with ${NAMESPACE}:delivery ssm: the fleet gets the group the stack creates in ${NAMESPACE}:vpcId `
                + "(the output securityGroupId, for its launch template), and preview checks every instance carrying the fleet's tag "
                + `(docs/fleets.md): remove ${NAMESPACE}:${key}`);
        }
    }
}

/** Every SSH connection checks its server's key, unless the loudly named opt-out is set. */
export function refuseUncheckedHostKeys(c: Pick<HostguardConfig, "hosts" | "bastion" | "insecureAcceptAnyHostKey">): void {
    const missing = c.insecureAcceptAnyHostKey ? undefined : uncheckedHostKeys(c)[0];
    if (missing) {
        throw new ConfigError(missing.key, `is required: ${HOST_KEY_HOWTO}`);
    }
}

/**
 * Refused rather than ignored: without AWS nothing would attach a group, and a
 * silently dropped instanceId would look like a hardened host that is not.
 */
export function refuseInstanceIdWithoutAws(c: Pick<HostguardConfig, "hosts" | "aws">): void {
    const i = c.aws ? -1 : c.hosts.findIndex((h) => h.instanceId !== undefined);
    if (i >= 0) {
        throw new ConfigError(`hosts[${i}].instanceId`, "is only used when hostguard:aws is true (it attaches the created security group); remove it");
    }
}

/** A kept group is listed once. */
export function refuseRepeatedKeptGroups(c: Pick<HostguardConfig, "keepSecurityGroupIds">): void {
    c.keepSecurityGroupIds.forEach((g, i) => {
        const first = c.keepSecurityGroupIds.indexOf(g);
        if (first !== i) {
            throw new ConfigError(`keepSecurityGroupIds[${i}]`, `repeats ${g} of keepSecurityGroupIds[${first}]: list it once`);
        }
    });
}

/** hostguard's group plus the kept ones fit EC2's quota of groups per interface. */
export function refuseTooManyKeptGroups(c: Pick<HostguardConfig, "keepSecurityGroupIds" | "keepSecurityGroupsLimit">): void {
    const [kept, limit] = [c.keepSecurityGroupIds.length, c.keepSecurityGroupsLimit];
    if (kept + 1 > limit) {
        throw new ConfigError("keepSecurityGroupIds", `lists ${kept} groups: with hostguard's that is ${kept + 1} on each interface, `
            + `more than the ${limit} EC2 allows (its quota of security groups per network interface): keep at most ${limit - 1}, `
            + `or, if your account's quota is higher, set \`pulumi config set ${NAMESPACE}:keepSecurityGroupsLimit N\``);
    }
}

/** The group is created or adopted in a VPC. */
export function refuseAwsWithoutVpc(c: Pick<HostguardConfig, "aws" | "vpcId">): void {
    if (c.aws && !c.vpcId) {
        throw new ConfigError("vpcId", "is required when hostguard:aws is true (the group is created or adopted in it)");
    }
}

/** Deploying over SSH needs a way in through the group: admin networks or the bastion's group. */
export function refuseAwsWithoutSshSource(c: Pick<HostguardConfig, "aws" | "adminCidrs" | "bastion" | "delivery">): void {
    if (c.aws && c.adminCidrs.length === 0 && !c.bastion?.securityGroupId && c.delivery === "ssh") {
        throw new ConfigError("adminCidrs", "must list at least one CIDR unless hostguard:bastion.securityGroupId is given (SSH is needed to deploy)");
    }
}

/** sharedSecurityGroupInstances accepts changes to an adopted group's other servers: only with one. */
export function refuseSharedWithoutAdopted(c: Pick<HostguardConfig, "aws" | "securityGroupId" | "sharedSecurityGroupInstances">): void {
    if (c.sharedSecurityGroupInstances.length > 0 && !(c.aws && c.securityGroupId)) {
        throw new ConfigError("sharedSecurityGroupInstances", "is only used with hostguard:securityGroupId (it accepts that the adopted group changes these servers too); remove it");
    }
}

/** keepSecurityGroupIds are kept beside a created group on the hosts' interfaces: only with both. */
export function refuseKeptWithoutCreated(c: Pick<HostguardConfig, "aws" | "securityGroupId" | "keepSecurityGroupIds" | "hosts">): void {
    if (c.keepSecurityGroupIds.length > 0 && (!c.aws || c.securityGroupId || !c.hosts.some((h) => h.instanceId))) {
        throw new ConfigError("keepSecurityGroupIds", "is only used with a created group and hosts[].instanceId (groups kept on the interface beside it); remove it");
    }
}

/** A kept group (a load balancer's?) without trustedProxies: nginx would log the balancer's address. */
export function loadBalancerWarnings(c: Pick<HostguardConfig, "keepSecurityGroupIds" | "settings">): string[] {
    if (c.keepSecurityGroupIds.length === 0 || c.settings.trustedProxies.length > 0) {
        return [];
    }
    return [`${NAMESPACE}:keepSecurityGroupIds is set (a load balancer's group?) and ${NAMESPACE}:trustedProxies is empty: `
        + "behind a load balancer nginx logs the balancer's address, so one scanner gets the balancer itself banned and every user cut off; "
        + "list the balancer's subnets in trustedProxies (docs/configuration.md, Behind a load balancer)"];
}

/**
 * A created group on no instance hardens nothing: each host without instanceId named (the adopt path needs none;
 * a fleet's group is exported for its launch template: it has no hosts to attach it to).
 */
export function attachWarnings(c: Pick<HostguardConfig, "aws" | "delivery" | "securityGroupId" | "hosts">): string[] {
    if (!c.aws || c.delivery !== "ssh" || c.securityGroupId !== undefined) {
        return [];
    }
    const fix = `set ${NAMESPACE}:hosts[i].instanceId of every host that is an EC2 instance, or adopt the server's own group with ${NAMESPACE}:securityGroupId`;
    if (c.hosts.every((h) => h.instanceId === undefined)) {
        return [`${NAMESPACE}:hosts[].instanceId is set for no host: the security group would be created attached to no instance, so no server gets its rules; ${fix}`];
    }
    return c.hosts.flatMap((h, i) => (h.instanceId !== undefined ? [] : [
        `${NAMESPACE}:hosts[${i}].instanceId is not set: the created security group is not attached to ${h.name} (${h.host}); ${fix}`]));
}

/** PagerDuty resolves an incident only with a resolved message. */
export function refusePagerdutyWithoutResolved(c: Pick<HostguardConfig, "chatFormat" | "settings">): void {
    if (c.chatFormat === "pagerduty" && !c.settings.alertSendResolved) {
        throw new ConfigError("alertSendResolved", "must be true with PagerDuty (chatFormat pagerduty, "
            + "set or implied by pagerdutyRoutingKey): without resolved messages no incident hostguard triggers is ever resolved; set it to true");
    }
}

// ---- placeholders ----------------------------------------------------------

/**
 * The mark of a value the example stacks ship for the user to replace (`i-REPLACE-ME-dev-web1`,
 * `sg-REPLACE-ME`, a host key spelling ReplaceMe). Case-sensitive: no real id or key holds it.
 */
export const PLACEHOLDER = /REPLACE-ME|ReplaceMe/;

export interface Placeholder { key: string; value: string }

/** What to put in place of a placeholder, by the key's last field. */
const PLACEHOLDER_FIX: Record<string, string> = {
    instanceId: "this host's EC2 instance id (`aws ec2 describe-instances --filters Name=private-ip-address,Values=ADDRESS "
        + "--query 'Reservations[].Instances[].InstanceId' --output text`)",
    securityGroupId: "the id of the security group to use (`aws ec2 describe-instances --instance-ids i-... "
        + "--query 'Reservations[].Instances[].SecurityGroups'`), or remove the key",
    vpcId: "the hosts' VPC id (`aws ec2 describe-instances --instance-ids i-... --query 'Reservations[].Instances[].VpcId' --output text`)",
    hostKey: "the server's SSH host key (`ssh-keyscan -t ed25519 HOST` over a trusted path)",
    "bastion.securityGroupId": "the bastion's security group id (SSH into the hosts is allowed from that group only)",
};

/** Every non-secret value still holding PLACEHOLDER, by its key (`hosts[0].instanceId`); lists and objects walked. */
function placeholdersOf(raw: RawConfig): Placeholder[] {
    const walk = (key: string, v: unknown): Placeholder[] => {
        if (typeof v === "string" && /^\s*[[{]/.test(v)) {
            try {
                return walk(key, JSON.parse(v));
            } catch {
                // Not JSON: a plain text value.
            }
        }
        if (typeof v === "string") {
            return PLACEHOLDER.test(v) ? [{ key, value: v }] : [];
        }
        if (Array.isArray(v)) {
            return v.flatMap((x, i) => walk(`${key}[${i}]`, x));
        }
        if (typeof v === "object" && v !== null && !isEncrypted(v)) {
            return Object.entries(v).flatMap(([k, x]) => walk(`${key}.${k}`, x));
        }
        return [];
    };
    return Object.entries(raw).filter(([k]) => !SECRET_KEYS.includes(k)).flatMap(([k, v]) => walk(k, v));
}

/** One line per placeholder: its key, its value and what to put there. */
export function placeholderLines(config: Pick<HostguardConfig, "placeholders">): string[] {
    return config.placeholders.map((p) => `${NAMESPACE}:${p.key} ${placeholderReason(p)}`);
}

function placeholderReason({ key, value }: Placeholder): string {
    const fix = PLACEHOLDER_FIX[key] ?? PLACEHOLDER_FIX[key.replace(/^.*\./, "")] ?? "your own value";
    return `is still the example stack's placeholder ${JSON.stringify(value)}: replace it with ${fix}`;
}

/** Preview and up stop on a placeholder, before any resource exists, naming every one. */
export function refusePlaceholders(config: Pick<HostguardConfig, "placeholders">): void {
    const [first, ...rest] = config.placeholders;
    if (first !== undefined) {
        throw new ConfigError(first.key, [placeholderReason(first), ...placeholderLines({ placeholders: rest }),
            "(preview and up refuse the stack until every placeholder is replaced; nothing was deployed)"].join("\n"));
    }
}


/** The destination's format and PagerDuty region (components/chatFormats.ts decides); a refusal names the key. */
function destination(raw: RawConfig, hasWebhookUrl: boolean, hasRoutingKey: boolean): { chatFormat?: ChatFormat; pagerdutyRegion: PagerdutyRegion } {
    const configured = text(raw, "chatFormat") as ChatFormat | undefined;
    const region = text(raw, "pagerdutyRegion") as PagerdutyRegion | undefined;
    const v = raw.webhookUrl;
    const url = typeof v === "string" && v !== "" ? v.trim() : undefined;
    try {
        return { chatFormat: resolveChatFormat({ url, hasWebhookUrl, hasRoutingKey, configured, region }), pagerdutyRegion: region ?? stackDefault<PagerdutyRegion>("pagerdutyRegion") };
    } catch (e) {
        if (e instanceof ChatFormatError) {
            throw new ConfigError(e.key, e.reason);
        }
        throw e;
    }
}

function deliveryOf(raw: RawConfig): "ssh" | "ssm" {
    return textOrDefault(raw, "delivery") as "ssh" | "ssm";
}

/** The State Manager association's settings (delivery ssm), defaults from their rows. */
function fleetSettings(raw: RawConfig): FleetSettings {
    const schedule = textOrDefault(raw, "fleetSchedule");
    refuseShortFleetRate(schedule);
    return {
        schedule,
        maxConcurrency: textOrDefault(raw, "fleetMaxConcurrency"),
        maxErrors: textOrDefault(raw, "fleetMaxErrors"),
        runsExpireDays: stackInteger(raw, "fleetRunsExpireDays")!,
        permissionsBoundary: requiredBoundary(raw),
    };
}

/**
 * The host role's permissions boundary: required, there is no default. Its ARN holds the account, which
 * the program does not know at preview, and the policy must exist before the up (an administrator creates
 * it: the deployer's policy cannot); a derived name would fail at CreateRole, after the bucket and key exist.
 */
function requiredBoundary(raw: RawConfig): string {
    const arn = text(raw, "fleetPermissionsBoundary");
    if (arn === undefined) {
        throw new ConfigError("fleetPermissionsBoundary", `is required with ${NAMESPACE}:delivery ssm: have an IAM administrator create the boundary policy of `
            + `docs/aws.md (Fleet path) once, then \`pulumi config set ${NAMESPACE}:fleetPermissionsBoundary arn:aws:iam::<account>:policy/<its name>\``);
    }
    return arn;
}

/** The payload settings, by the table of components/settings.ts; a refusal names the key. */
function settingsOf(raw: RawConfig): PayloadSettings {
    for (const key of SETTING_KEYS) {
        scalar(raw, key);
    }
    const settings = validateSettings(raw);
    refuseBadNeverBanned(settings);
    return settings;
}

// ---- secrets -------------------------------------------------------------

/** A value from the stack YAML that is still encrypted (`{secure: ...}`): present, unreadable. */
function isEncrypted(v: unknown): boolean {
    return typeof v === "object" && v !== null && "secure" in v;
}

/** Refuses a secret key set in plain text (in the stack file, or `pulumi config set` without --secret); returns the warnings when the source cannot tell. */
function plainSecrets(raw: RawConfig, secretKeys: readonly string[] | undefined): string[] {
    const warnings: string[] = [];
    for (const key of SECRET_KEYS) {
        const v = raw[key];
        if (v === undefined || v === "" || isEncrypted(v)) {
            continue;
        }
        if (secretKeys === undefined) {
            warnings.push(`${NAMESPACE}:${key}: the engine did not say whether it is secret; make sure it was set with \`pulumi config set --secret ${NAMESPACE}:${key} ...\``);
        } else if (!secretKeys.includes(key)) {
            throw new ConfigError(key, `is set in plain text (anyone who reads the stack file or its history has it): `
                + `remove it and set it with \`pulumi config set --secret ${NAMESPACE}:${key} ...\` (the value is not shown)`);
        }
    }
    return warnings;
}

/** Checks a secret by its row's rule without ever showing the value; returns whether it is present. */
function secretPresent(raw: RawConfig, key: StackKey, required: boolean): boolean {
    const row = stackKeyRow(key);
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
    // The URL is sent trimmed (urlLine); the host checks the same rule on it.
    const value = typeof v === "string" && row.rule === "httpsUrl" ? v.trim() : v;
    if (typeof value !== "string" || !ruleRegExp(row.rule!).test(value)) {
        throw new ConfigError(key, `must be ${RULES[row.rule!].allowed} (the value is not shown because it is a secret)`);
    }
    return true;
}

// ---- hosts and bastion ---------------------------------------------------

/** One structured value's fields by the row's field table; unknown fields refused naming the closest. */
function fieldsOf(key: string, row: StackKeyRow, v: unknown, sshUser: string): Record<string, unknown> {
    const fields = row.fields!;
    const names = fields.map((f) => f.name);
    const shape = `{${fields.map((f) => (f.default === "(required)" ? f.name : `${f.name}?`)).join(", ")}}`;
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
        throw new ConfigError(key, `must be an object ${shape}`);
    }
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
        if (!names.includes(k)) {
            throw new ConfigError(`${key}.${k}`, `is not a known field: did you mean ${closest(k, names)}? (fields: ${names.join(", ")})`);
        }
    }
    const out: Record<string, unknown> = {};
    for (const f of fields) {
        const at = `${key}.${f.name}`;
        const x = o[f.name];
        if (x === undefined) {
            if (f.default === "(required)" && f.name !== "hostKey") {
                throw new ConfigError(at, `is required: ${f.doc}`);
            }
            if (f.value !== undefined) {
                out[f.name] = f.value;
            }
            continue;
        }
        if (f.rule === "hostKey") {
            out[f.name] = hostKey(at, x);
        } else if (f.rule !== undefined) {
            out[f.name] = matches(at, x, f.rule);
        } else {
            out[f.name] = integerIn(at, x, f.min!, f.max!);
        }
    }
    if (names.includes("user")) {
        out.user ??= sshUser;
    }
    return out;
}

function hostList(raw: RawConfig, sshUser: string): TargetHost[] {
    const row = stackKeyRow("hosts");
    const list = structuredValue("hosts", raw.hosts);
    if (!Array.isArray(list) || list.length === 0) {
        throw new ConfigError("hosts", `must list at least one host {${row.fields!.map((f) => f.name).join(", ")}}`);
    }
    const names = new Map<string, number>();
    const targets = new Map<string, number>();
    const instances = new Map<string, number>();
    return list.map((h, i) => {
        const key = `hosts[${i}]`;
        const o = fieldsOf(key, row, h, sshUser);
        const name = o.name as string;
        if (names.has(name)) {
            throw new ConfigError(`${key}.name`, `repeats the name ${name} of hosts[${names.get(name)}]`);
        }
        names.set(name, i);
        const target = `${addressKey(o.host as string)}:${o.port as number}`;
        if (targets.has(target)) {
            throw new ConfigError(`${key}.host`, `is the same machine as hosts[${targets.get(target)}] (address ${o.host as string} and port ${o.port as number}): `
                + "two deployments would fight over one host; list it once");
        }
        targets.set(target, i);
        if (o.instanceId !== undefined) {
            const id = o.instanceId as string;
            if (instances.has(id)) {
                throw new ConfigError(`${key}.instanceId`, `repeats ${id} of hosts[${instances.get(id)}]: one instance is one host; `
                    + "list it once (two hosts on one instance would fight over its groups)");
            }
            instances.set(id, i);
        }
        return {
            name,
            host: o.host as string,
            port: o.port as number,
            user: o.user as string,
            hostKey: o.hostKey as string | undefined,
            // Only present when given, so hosts without it compare equal to before.
            ...(o.instanceId === undefined ? {} : { instanceId: o.instanceId as string }),
        };
    });
}

function bastionSettings(raw: RawConfig, sshUser: string): BastionSettings | undefined {
    const b = structuredValue("bastion", raw.bastion);
    if (b === undefined) {
        return undefined;
    }
    const o = fieldsOf("bastion", stackKeyRow("bastion"), b, sshUser);
    return {
        host: o.host as string, port: o.port as number, user: o.user as string,
        hostKey: o.hostKey as string | undefined, securityGroupId: o.securityGroupId as string | undefined,
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

/** The opt-out's warning, on every preview and up while it is set; empty when it is not. */
export function hostKeyWarning(config: Pick<HostguardConfig, "insecureAcceptAnyHostKey" | "hosts" | "bastion">): string {
    if (!config.insecureAcceptAnyHostKey) {
        return "";
    }
    const unchecked = uncheckedHostKeys(config);
    const which = unchecked.length === 0 ? "no connection at the moment (every host key is set; remove the key)"
        : unchecked.map((u) => `${NAMESPACE}:${u.key} of ${u.target}`).join(", ");
    return `INSECURE: ${NAMESPACE}:${INSECURE_HOST_KEY_OPT_OUT} is true. SSH accepts ANY server key for ${which}: ` +
        "anyone on the network path can pose as the server and receive the webhook URL and every script. " +
        `Set the host keys (\`ssh-keyscan -t ed25519 HOST\` over a trusted path) and remove ${NAMESPACE}:${INSECURE_HOST_KEY_OPT_OUT}.`;
}

/** Everything preview (and `npm run render`) warns about: the host-key opt-out, then values surely wrong. */
export function configWarnings(config: HostguardConfig): string[] {
    return [hostKeyWarning(config), ...config.warnings].filter((w) => w !== "");
}

function hostKey(key: string, v: unknown): string {
    const why = typeof v === "string" ? hostKeyRefusal(v) : `must be ${RULES.hostKey.allowed}`;
    if (why !== null) {
        throw new ConfigError(key, why);
    }
    return v as string;
}

// ---- scalar helpers ------------------------------------------------------

/** A list stack key (its row's value when unset). */
function listKey(raw: RawConfig, key: StackKey): string[] {
    return raw[key] === undefined ? [...stackDefault<readonly string[]>(key)] : stringList(key, raw[key]);
}

/**
 * A list of CIDR blocks: each well-formed, together within the public limit
 * (components/cidr.ts states it), repeats and overlaps reported as warnings.
 */
function addressList(raw: RawConfig, key: "privateCidrs" | "adminCidrs", warnings: string[],
    say: { whole: (c: string) => string; wide: string; privateOnly?: boolean }): string[] {
    const list = listKey(raw, key).map((c, i) => {
        if (!isCidr(c)) {
            throw new ConfigError(`${key}[${i}]`, `must be ${RULES.cidr.allowed}, got ${JSON.stringify(c)}`);
        }
        const fix = hostBitsFix(c);
        if (fix !== null) {
            throw new ConfigError(`${key}[${i}]`, `${c} has host bits set (EC2 would store it as ${fix}, and every later up would differ): did you mean ${fix}?`);
        }
        const canonical = blockText(parseBlock(c)!);
        if (c.includes(":") && canonical !== c) {
            throw new ConfigError(`${key}[${i}]`, `${c} is not written as EC2 stores it (${canonical}), so every later up would differ: write ${canonical}`);
        }
        return c;
    });
    // EC2 refuses a whole authorize call that holds one block twice (InvalidPermission.Duplicate).
    const repeat = overlaps(list).find((o) => o.how === "repeats");
    if (repeat !== undefined) {
        throw new ConfigError(`${key}[${repeat.j}]`, `${list[repeat.j]} repeats ${key}[${repeat.i}] ${list[repeat.i]}: EC2 refuses a rule that lists a block twice; list it once`);
    }
    // The rule for privateCidrs (the SPEC: 8080 only from the private network): every entry inside a private range.
    const outside = say.privateOnly ? list.findIndex((c) => !isPrivateBlock(c)) : -1;
    if (outside >= 0) {
        throw new ConfigError(`${key}[${outside}]`, `${list[outside]} is not a private network, and port 8080 must not be reachable from the internet: `
            + `list the private ranges your servers' clients use (inside ${PRIVATE_RANGES.join(", ")}), or, if that network really `
            + `uses public addresses, set \`pulumi config set ${NAMESPACE}:privateCidrsAllowPublic true\``);
    }
    const whole = list.findIndex(isWholeInternet);
    if (whole >= 0) {
        throw new ConfigError(`${key}[${whole}]`, say.whole(list[whole]));
    }
    const wide = widePublicReason(list);
    if (wide !== null) {
        throw new ConfigError(key, `${wide}: they ${say.wide}`);
    }
    warnings.push(...overlapWarnings(key, list));
    return list;
}

function overlapWarnings(key: string, list: readonly string[]): string[] {
    return overlaps(list).map(({ i, j, how }) => {
        const [a, b] = [`${key}[${i}] ${list[i]}`, `${NAMESPACE}:${key}[${j}] ${list[j]}`];
        const verb = { repeats: "repeats", inside: "lies inside", contains: "contains", overlaps: "overlaps" }[how];
        const hint = { repeats: "remove one", inside: "one entry is enough", contains: "one entry is enough", overlaps: "they share addresses" }[how];
        return `${b} ${verb} ${a} (${hint})`;
    });
}

/** A list of AWS ids by the row's rule. */
function idList(raw: RawConfig, key: "sharedSecurityGroupInstances" | "keepSecurityGroupIds"): string[] {
    const rule = stackKeyRow(key).rule!;
    return listKey(raw, key).map((v, i) => matches(`${key}[${i}]`, v, rule));
}

function scalar(raw: RawConfig, key: string): unknown {
    const v = raw[key];
    if (isEncrypted(v)) {
        throw new ConfigError(key, "must not be a secret");
    }
    return v;
}

/** An integer stack key by its row's range; unset: the row's value (undefined for a key without one). */
function stackInteger(raw: RawConfig, key: StackKey): number | undefined {
    const row = stackKeyRow(key);
    const v = scalar(raw, key);
    return v === undefined ? row.value as number | undefined : integerIn(key, v, row.min!, row.max!);
}

/** A boolean stack key; unset: the row's value. */
function stackBool(raw: RawConfig, key: StackKey): boolean {
    const v = scalar(raw, key);
    return v === undefined ? stackDefault<boolean>(key) : booleanOf(key, v);
}

function matches(key: string, v: unknown, rule: RuleName): string {
    // A placeholder passes here so that render shows the stack; preview refuses it (refusePlaceholders).
    if (typeof v !== "string" || !(ruleRegExp(rule).test(v) || PLACEHOLDER.test(v))) {
        throw new ConfigError(key, `must be ${RULES[rule].allowed}, got ${JSON.stringify(v)}`);
    }
    return v;
}

/** A text stack key by its row's rule; undefined when unset or empty. */
function text(raw: RawConfig, key: StackKey): string | undefined {
    const v = scalar(raw, key);
    return v === undefined || v === "" ? undefined : matches(key, v, stackKeyRow(key).rule!);
}

/** A text stack key by its row's rule; unset: the row's value. */
function textOrDefault(raw: RawConfig, key: StackKey): string {
    return text(raw, key) ?? stackDefault<string>(key);
}
