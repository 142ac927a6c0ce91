// What hostguard changes in EC2 that it did not create, as plain functions over
// an EC2 client (AWS SDK for JavaScript v3): an adopted group's inbound rules
// and the groups of every network interface of an instance. Each change records
// what was there so that it can be put back exactly. The dynamic providers
// (adoptedGroup.ts, interfaceGroups.ts) only call these; the moto tests drive
// them directly. Endpoint and credentials come from the SDK's standard chain
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2, AWS_PROFILE, instance roles, ...).
//
// These functions are serialized into the Pulumi state with the dynamic
// providers, so they capture nothing but each other and load the SDK with
// `require` when they run.

import { protocolName, widePublicReason } from "./cidr";

/** One inbound permission for one source: the unit EC2 authorizes and revokes. */
export interface RuleAtom {
    /** Lower case: tcp, udp, icmp, icmpv6, -1 (all), or a protocol number. */
    protocol: string;
    /** Absent for protocol -1 (all traffic has no ports). */
    fromPort?: number;
    toPort?: number;
    kind: "cidr4" | "cidr6" | "group" | "prefixList";
    /** The CIDR, the group id or the prefix list id. */
    source: string;
    /** The account of a referenced group, when it is not the group's own (a restore must name it). */
    userId?: string;
    description?: string;
}

/** A rule as hostguard states it (the shape of aws.ec2.SecurityGroup's ingress). */
export interface WantedRule {
    description: string;
    protocol: string;
    fromPort: number;
    toPort: number;
    cidrBlocks: string[];
    ipv6CidrBlocks: string[];
    securityGroups: string[];
}

/** The tag on the group hostguard creates (securityGroup.ts); the IAM policy of the create path scopes changes to it. */
export const HOSTGUARD_TAG = { key: "managed-by", value: "hostguard" } as const;

/**
 * The descriptions of hostguard's inbound rules (securityGroup.ts's
 * ingressRules): a group holding one of them, whatever its source, holds
 * hostguard's change, not a user's original.
 */
export const HOSTGUARD_RULE_DESCRIPTIONS = [
    "HTTPS from anywhere",
    "application port from the private network",
    "SSH for deployment from admin networks",
    "SSH for deployment via the bastion",
] as const;

/** Of ATOMS, those that carry one of hostguard's descriptions. */
export function hostguardAtoms(atoms: RuleAtom[]): RuleAtom[] {
    return atoms.filter((a) => (HOSTGUARD_RULE_DESCRIPTIONS as readonly string[]).includes(a.description ?? ""));
}

/** The part of an EC2 client used here: `send(command)`. */
export interface Ec2 {
    send(command: unknown): Promise<any>;
}

/**
 * A client for REGION; endpoint and credentials from the SDK's default chain,
 * never from inputs. PROFILE is `aws:profile` (a named profile of the shared
 * config, with its role_arn/source_profile, SSO or credential_process, as the
 * SDK reads them). Retries are adaptive (client-side rate limiting on
 * throttling) with 10 attempts, unless AWS_MAX_ATTEMPTS / AWS_RETRY_MODE say
 * otherwise.
 */
export function ec2Client(region: string, profile?: string): Ec2 {
    const sdk = require("@aws-sdk/client-ec2");
    const attempts = Number(process.env.AWS_MAX_ATTEMPTS);
    return new sdk.EC2Client({
        region, ...(profile ? { profile } : {}),
        maxAttempts: Number.isInteger(attempts) && attempts > 0 ? attempts : 10,
        retryMode: process.env.AWS_RETRY_MODE || "adaptive",
    });
}

/** True when E is an EC2 error with one of CODES. */
export function hasCode(e: unknown, codes: string[]): boolean {
    const x = e as { name?: string; Code?: string; code?: string } | undefined;
    return codes.some((c) => c === x?.name || c === x?.Code || c === x?.code);
}

/** True when E is one of EC2's "does not exist" errors named in CODES. */
export function isNotFound(e: unknown, codes: string[]): boolean {
    return hasCode(e, codes);
}

/**
 * An error after EC2 was changed: the dynamic providers turn it into the
 * engine's initialization failure (id and properties kept in the state), so
 * what to restore is never lost. FIRST is the message of the original error.
 */
export function changedError(e: unknown, message: string): Error {
    const err = new Error(message) as Error & { ec2Changed: boolean; cause: unknown };
    err.ec2Changed = true;
    err.cause = e;
    return err;
}

/** An SDK error as `Code: message` (the code says what to do: RequestLimitExceeded, UnauthorizedOperation, ...). */
export function errorText(e: unknown): string {
    const x = e as Error | undefined;
    return x?.name && x.name !== "Error" && !x.message.startsWith(x.name) ? `${x.name}: ${x.message}` : String(x?.message ?? e);
}

/** True for an error raised after EC2 was changed (changedError). */
export function wasChanged(e: unknown): boolean {
    return (e as { ec2Changed?: boolean } | undefined)?.ec2Changed === true;
}

/**
 * Reads until OK holds (EC2 is eventually consistent: a read right after a
 * change may show the old state), waiting 0.25 s, 0.5 s, 1 s, ... between
 * tries; returns the last reading either way. A read that throws is retried the
 * same way (the SDK's own retries come first); the last error is thrown.
 */
export async function settle<T>(read: () => Promise<T>, ok: (x: T) => boolean, tries = Number(process.env.HOSTGUARD_READBACK_TRIES) || 6): Promise<T> {
    let last: { value?: T; error?: unknown } = {};
    for (let i = 0; i < tries; i++) {
        if (i > 0) {
            await new Promise((r) => setTimeout(r, 250 * 2 ** (i - 1)));
        }
        try {
            last = { value: await read() };
            if (ok(last.value as T)) {
                return last.value as T;
            }
        } catch (e) {
            last = { error: e };
        }
    }
    if ("error" in last) {
        throw last.error;
    }
    return last.value as T;
}

function command(name: string, input: Record<string, unknown>): unknown {
    const sdk = require("@aws-sdk/client-ec2");
    return new sdk[`${name}Command`](input);
}

const normalProtocol = (p: unknown): string => protocolName(String(p ?? ""));

/** Identity of a permission as EC2 matches it on revoke (descriptions do not count). */
export function ruleKey(a: RuleAtom): string {
    const ports = a.protocol === "-1" || a.fromPort === undefined ? "" : `${a.fromPort}-${a.toPort}`;
    return `${a.protocol}|${ports}|${a.kind}|${a.source}`;
}

/** A stable order, so that recorded sets compare equal however EC2 listed them. */
export function sortAtoms(atoms: RuleAtom[]): RuleAtom[] {
    const k = (a: RuleAtom) => `${ruleKey(a)}|${a.description ?? ""}`;
    return [...atoms].sort((a, b) => (k(a) < k(b) ? -1 : k(a) > k(b) ? 1 : 0));
}

/**
 * EC2's IpPermissions, one atom per source, in a stable order. A referenced
 * group's account is kept only when it differs from OWNER_ID, the group's own
 * account (EC2 then needs it; for the same account it is implied).
 */
export function atomsOf(permissions: any[] | undefined, ownerId?: string): RuleAtom[] {
    const out: RuleAtom[] = [];
    for (const p of permissions ?? []) {
        const protocol = normalProtocol(p.IpProtocol);
        // All traffic has no ports; other protocols without ports (ESP, GRE, ...) come without them.
        const ports = protocol === "-1" || p.FromPort === undefined || p.FromPort === null ? {} : { fromPort: Number(p.FromPort), toPort: Number(p.ToPort) };
        const atom = (kind: RuleAtom["kind"], source: string, description?: string, userId?: string): RuleAtom => ({
            protocol, ...ports, kind, source,
            ...(userId ? { userId } : {}),
            ...(description ? { description } : {}),
        });
        for (const r of p.IpRanges ?? []) out.push(atom("cidr4", r.CidrIp, r.Description));
        for (const r of p.Ipv6Ranges ?? []) out.push(atom("cidr6", String(r.CidrIpv6).toLowerCase(), r.Description));
        for (const r of p.UserIdGroupPairs ?? []) out.push(atom("group", r.GroupId, r.Description, r.UserId === ownerId ? undefined : r.UserId));
        for (const r of p.PrefixListIds ?? []) out.push(atom("prefixList", r.PrefixListId, r.Description));
    }
    return sortAtoms(out);
}

/**
 * One IpPermission per atom (EC2 accepts them in one call, all or nothing).
 * Descriptions go along on revoke too: EC2 ignores them there, moto matches a
 * referenced group's with them.
 */
export function permissionsOf(atoms: RuleAtom[]): any[] {
    return atoms.map((a) => {
        const d = a.description ? { Description: a.description } : {};
        const p: any = { IpProtocol: a.protocol };
        if (a.protocol !== "-1" && a.fromPort !== undefined) {
            p.FromPort = a.fromPort;
            p.ToPort = a.toPort;
        }
        switch (a.kind) {
            case "cidr4": p.IpRanges = [{ CidrIp: a.source, ...d }]; break;
            case "cidr6": p.Ipv6Ranges = [{ CidrIpv6: a.source, ...d }]; break;
            case "group": p.UserIdGroupPairs = [{ GroupId: a.source, ...(a.userId ? { UserId: a.userId } : {}), ...d }]; break;
            case "prefixList": p.PrefixListIds = [{ PrefixListId: a.source, ...d }]; break;
        }
        return p;
    });
}

/** hostguard's rules as atoms. */
export function wantedAtoms(rules: WantedRule[]): RuleAtom[] {
    return sortAtoms(rules.flatMap((r) => {
        const protocol = normalProtocol(r.protocol);
        const base = { protocol, ...(protocol === "-1" ? {} : { fromPort: r.fromPort, toPort: r.toPort }), description: r.description };
        return [
            ...r.cidrBlocks.map((c) => ({ ...base, kind: "cidr4" as const, source: c })),
            // EC2 shows IPv6 addresses in lower case.
            ...r.ipv6CidrBlocks.map((c) => ({ ...base, kind: "cidr6" as const, source: c.toLowerCase() })),
            ...r.securityGroups.map((g) => ({ ...base, kind: "group" as const, source: g })),
        ];
    }));
}

/**
 * What turns ACTUAL into WANTED, by the permission's identity (ruleKey: EC2
 * matches on everything but the description, and one group holds one of
 * each): an actual permission not wanted is revoked, a wanted one missing is
 * authorized, one present with another description is only re-described.
 */
export function ingressDiff(actual: RuleAtom[], wanted: RuleAtom[]): { revoke: RuleAtom[]; authorize: RuleAtom[]; describe: RuleAtom[] } {
    const has = (list: RuleAtom[], a: RuleAtom) => list.find((x) => ruleKey(x) === ruleKey(a));
    const revoke = actual.filter((a) => !has(wanted, a));
    const authorize = wanted.filter((w) => !has(actual, w));
    const describe = wanted.filter((w) => {
        const a = has(actual, w);
        return a !== undefined && (a.description ?? "") !== (w.description ?? "");
    });
    return { revoke, authorize, describe };
}

/** True when both lists hold the same permissions with the same descriptions. */
export function sameAtoms(a: RuleAtom[], b: RuleAtom[]): boolean {
    const d = ingressDiff(a, b);
    return d.revoke.length === 0 && d.authorize.length === 0 && d.describe.length === 0;
}

/** EC2's default quota: inbound rules per group, counted per address family. */
export const RULES_PER_GROUP = 60;

/**
 * True when the permission keeps TCP 443 open to the world (tcp with 443 in its
 * range, or all traffic, from a source that is the world by itself by
 * cidr.ts's rule): revoking it before the authorize could close 443.
 */
export function keepsWorld443(a: RuleAtom): boolean {
    const world = (a.kind === "cidr4" || a.kind === "cidr6") && widePublicReason([a.source]) !== null;
    return world && (a.protocol === "-1" || (a.protocol === "tcp" && (a.fromPort ?? 0) <= 443 && 443 <= (a.toPort ?? 65535)));
}

/**
 * Which revokes go before the authorize: "plan" as the quota count says,
 * "not443" those that do not keep 443 open to the world, "all" every one (443 may close).
 */
export type RevokeOrder = "plan" | "not443" | "all";

/** One step of a reconcile, in order. */
export interface IngressStep {
    op: "describe" | "authorize" | "revoke";
    atoms: RuleAtom[];
}

/**
 * The order of the calls that turn ACTUAL into WANTED without a moment when
 * 443 is closed: descriptions first (in place), then authorize, then revoke.
 * When authorizing first would go over LIMIT rules in a family (a group
 * reference or prefix list counts in both, the safe side), the revokes that do
 * not keep 443 open to the world go first (a rule that admits 443 from a
 * private range is one of them); only when that is still not enough does
 * every revoke go first (then 443 may close between two calls).
 */
export function ingressSteps(actual: RuleAtom[], wanted: RuleAtom[], limit = RULES_PER_GROUP, order: RevokeOrder = "plan"): IngressStep[] {
    const { revoke, authorize, describe } = ingressDiff(actual, wanted);
    const count = (atoms: RuleAtom[], family: "4" | "6") => atoms.filter((a) => (family === "4" ? a.kind !== "cidr6" : a.kind !== "cidr4")).length;
    const fits = (revokedFirst: RuleAtom[]) => (["4", "6"] as const).every((f) => count(actual, f) - count(revokedFirst, f) + count(authorize, f) <= limit);
    const closed = revoke.filter((a) => !keepsWorld443(a));
    const early = authorize.length === 0 ? []
        : order === "all" ? revoke
            : order === "not443" || !fits([]) ? (order === "not443" || fits(closed) ? closed : revoke) : [];
    const late = revoke.filter((a) => !early.includes(a));
    const steps: IngressStep[] = [
        { op: "describe", atoms: describe }, { op: "revoke", atoms: early }, { op: "authorize", atoms: authorize }, { op: "revoke", atoms: late },
    ];
    return steps.filter((s) => s.atoms.length > 0);
}

async function applyStep(client: Ec2, groupId: string, step: IngressStep): Promise<void> {
    const name = { describe: "UpdateSecurityGroupRuleDescriptionsIngress", authorize: "AuthorizeSecurityGroupIngress", revoke: "RevokeSecurityGroupIngress" }[step.op];
    await client.send(command(name, { GroupId: groupId, IpPermissions: permissionsOf(step.atoms) }));
}

/** The group's inbound rules as they are now, or null when the group does not exist (any more). */
export async function findIngress(client: Ec2, groupId: string): Promise<RuleAtom[] | null> {
    let out: any;
    try {
        out = await client.send(command("DescribeSecurityGroups", { GroupIds: [groupId] }));
    } catch (e) {
        if (isNotFound(e, ["InvalidGroup.NotFound", "InvalidGroupId.NotFound"])) {
            return null;
        }
        throw e;
    }
    const group = (out.SecurityGroups ?? []).find((g: any) => g.GroupId === groupId);
    return group ? atomsOf(group.IpPermissions, group.OwnerId) : null;
}

/** The group's inbound rules as they are now. */
export async function describeIngress(client: Ec2, groupId: string): Promise<RuleAtom[]> {
    const atoms = await findIngress(client, groupId);
    if (atoms === null) {
        throw new Error(`security group ${groupId} not found`);
    }
    return atoms;
}

/** Of GROUP_IDS, the ones that exist (DescribeSecurityGroups by filter: a missing id is no error). */
export async function existingGroups(client: Ec2, groupIds: string[]): Promise<string[]> {
    if (groupIds.length === 0) {
        return [];
    }
    const found = new Set<string>();
    let token: string | undefined;
    do {
        const out = await client.send(command("DescribeSecurityGroups", { Filters: [{ Name: "group-id", Values: groupIds }], ...(token ? { NextToken: token } : {}) }));
        for (const g of out.SecurityGroups ?? []) {
            found.add(g.GroupId);
        }
        token = out.NextToken;
    } while (token);
    return groupIds.filter((g) => found.has(g));
}

/** Of GROUP_IDS, the ones tagged as hostguard's (HOSTGUARD_TAG), whichever stack created them. */
export async function hostguardTagged(client: Ec2, groupIds: string[]): Promise<string[]> {
    if (groupIds.length === 0) {
        return [];
    }
    const tagged = new Set<string>();
    let token: string | undefined;
    do {
        const out = await client.send(command("DescribeSecurityGroups", { Filters: [{ Name: "group-id", Values: groupIds }], ...(token ? { NextToken: token } : {}) }));
        for (const g of out.SecurityGroups ?? []) {
            if ((g.Tags ?? []).some((t: any) => t.Key === HOSTGUARD_TAG.key && t.Value === HOSTGUARD_TAG.value)) {
                tagged.add(g.GroupId);
            }
        }
        token = out.NextToken;
    } while (token);
    return groupIds.filter((g) => tagged.has(g));
}

export interface ReconcileResult {
    /** The inbound rules before the change (what a restore puts back). */
    before: RuleAtom[];
    /** The inbound rules after it, read back from EC2. */
    after: RuleAtom[];
    revoked: RuleAtom[];
    authorized: RuleAtom[];
    /** Permissions kept, with their description changed in place. */
    described: RuleAtom[];
}

/** True when NOW shows STEP's effect (EC2 applied a call whose answer was lost). */
function stepShows(now: RuleAtom[], step: IngressStep): boolean {
    const found = (a: RuleAtom) => now.find((x) => ruleKey(x) === ruleKey(a));
    return step.atoms.every((a) => (step.op === "revoke" ? found(a) === undefined
        : step.op === "authorize" ? found(a) !== undefined : (found(a)?.description ?? "") === (a.description ?? "")));
}

/**
 * Puts back what the revokes among STEPS took away and NOW (the group read
 * after the failure; null when unread) does not show; says what it did.
 */
async function undoRevokes(client: Ec2, groupId: string, steps: IngressStep[], now: RuleAtom[] | null): Promise<string> {
    const revoked = steps.filter((s) => s.op === "revoke").flatMap((s) => s.atoms)
        .filter((a) => now === null || !now.some((x) => ruleKey(x) === ruleKey(a)));
    if (revoked.length === 0) {
        return "no rule had been revoked";
    }
    try {
        await applyStep(client, groupId, { op: "authorize", atoms: revoked });
        return "its revoked rules were put back";
    } catch (r) {
        return `putting its revoked rules back failed too (${(r as Error).message}); run the command again`;
    }
}

/**
 * Makes the group's inbound rules exactly WANTED, in the order of
 * ingressSteps (443 stays open throughout unless the rules quota forbids it).
 * A call that fails may still have been applied (a 5xx whose answer was lost,
 * then the SDK's retry refused as InvalidPermission.Duplicate): the group is
 * read again, and a step whose effect shows counts as done. When EC2 refuses
 * the authorize for the quota (it counts otherwise than planned: a lower
 * quota; moto counts IPv4 and IPv6 together), it starts again with the revokes
 * that do not let 443 in first, then with all of them. When a step fails, the
 * revokes made (the failed one included) are put back (rules authorized or
 * re-described stay: they are hostguard's), and the error says so. Any
 * failure once a change was sent is a changedError.
 */
export async function reconcileIngress(client: Ec2, groupId: string, wanted: RuleAtom[], limit = RULES_PER_GROUP, order: RevokeOrder = "plan"): Promise<ReconcileResult> {
    const before = await describeIngress(client, groupId);
    const steps = ingressSteps(before, wanted, limit, order);
    const done: IngressStep[] = [];
    for (const step of steps) {
        try {
            await applyStep(client, groupId, step);
        } catch (e) {
            const now = await findIngress(client, groupId).catch(() => null);
            if (now === null || !stepShows(now, step)) {
                const rollback = await undoRevokes(client, groupId, [...done, step], now);
                // The account counts rules otherwise than planned (a lower quota, v4 and v6 together): the next order, from the state as it is.
                const next = { plan: "not443", not443: "all", all: undefined }[order] as RevokeOrder | undefined;
                if (next && step.op === "authorize" && hasCode(e, ["RulesPerSecurityGroupLimitExceeded"]) && !rollback.includes("failed too")) {
                    // `before` stays the first reading: a description already changed in place is not the original.
                    return { ...(await reconcileIngress(client, groupId, wanted, limit, next)), before };
                }
                // The call was sent: EC2 may have applied it, so the group counts as changed.
                throw changedError(e, `changing the inbound rules of ${groupId} failed: ${errorText(e)}; ${rollback}`);
            }
        }
        done.push(step);
    }
    let after: RuleAtom[];
    try {
        after = await settle(() => describeIngress(client, groupId), (now) => sameAtoms(now, wanted));
    } catch (e) {
        throw steps.length > 0 ? changedError(e, `reading back the inbound rules of ${groupId} failed: ${errorText(e)}`) : e;
    }
    if (!sameAtoms(after, wanted)) {
        const message = `the inbound rules of ${groupId} do not read back as wanted: ${JSON.stringify(ingressDiff(after, wanted))}`;
        throw steps.length > 0 ? changedError(undefined, message) : new Error(message);
    }
    const pick = (op: IngressStep["op"]) => steps.filter((s) => s.op === op).flatMap((s) => s.atoms);
    return { before, after, revoked: pick("revoke"), authorized: pick("authorize"), described: pick("describe") };
}

/**
 * Puts the group's inbound rules back to ORIGINAL (a reconcile towards the
 * recorded set, by content: EC2 gives the rules new ids, and rule tags are not
 * kept). A rule that references a group that no longer exists cannot be put
 * back: it is skipped and named in `skipped`. Null when the group itself is gone.
 */
export async function restoreIngress(client: Ec2, groupId: string, original: RuleAtom[]): Promise<(ReconcileResult & { skipped: RuleAtom[] }) | null> {
    if ((await findIngress(client, groupId)) === null) {
        return null;
    }
    const referenced = [...new Set(original.filter((a) => a.kind === "group" && !a.userId).map((a) => a.source))];
    const alive = await existingGroups(client, referenced);
    const skipped = original.filter((a) => a.kind === "group" && !a.userId && !alive.includes(a.source));
    const r = await reconcileIngress(client, groupId, original.filter((a) => !skipped.includes(a)));
    return { ...r, skipped };
}

/** A network interface that carries a group, and the instance it is attached to (if any). */
export interface GroupUser {
    networkInterfaceId: string;
    instanceId?: string;
    description?: string;
}

/** Every network interface that carries GROUP_ID. */
export async function interfacesCarrying(client: Ec2, groupId: string): Promise<GroupUser[]> {
    const users: GroupUser[] = [];
    let token: string | undefined;
    do {
        const out = await client.send(command("DescribeNetworkInterfaces", {
            Filters: [{ Name: "group-id", Values: [groupId] }], ...(token ? { NextToken: token } : {}),
        }));
        for (const n of out.NetworkInterfaces ?? []) {
            users.push({
                networkInterfaceId: n.NetworkInterfaceId,
                ...(n.Attachment?.InstanceId ? { instanceId: n.Attachment.InstanceId } : {}),
                ...(n.Description ? { description: n.Description } : {}),
            });
        }
        token = out.NextToken;
    } while (token);
    return users.sort((a, b) => (a.networkInterfaceId < b.networkInterfaceId ? -1 : 1));
}

/**
 * The interfaces carrying the group that belong to none of the stack's
 * instances and were not accepted by the user (by instance id, or by
 * interface id for an interface without an instance: a load balancer's, ...).
 */
export function foreignUsers(users: GroupUser[], stackInstanceIds: string[], accepted: string[]): GroupUser[] {
    return users.filter((u) => {
        const owner = u.instanceId ?? u.networkInterfaceId;
        return !(u.instanceId !== undefined && stackInstanceIds.includes(u.instanceId)) && !accepted.includes(owner);
    });
}

/** The guard's refusal, or "" when the group may be changed. KEY is the opt-in's config key. */
export function sharedGroupRefusal(groupId: string, foreign: GroupUser[], key: string): string {
    if (foreign.length === 0) {
        return "";
    }
    const names = foreign.map((u) => (u.instanceId ? `instance ${u.instanceId} (${u.networkInterfaceId})` : `interface ${u.networkInterfaceId}${u.description ? ` "${u.description}"` : ""}`));
    const ids = foreign.map((u) => u.instanceId ?? u.networkInterfaceId);
    return `security group ${groupId} is also used by ${names.join(", ")}, which ${foreign.length === 1 ? "is" : "are"} not a host of this stack: ` +
        `adopting it would change ${foreign.length === 1 ? "that server's" : "those servers'"} inbound rules too. ` +
        `Give each of this stack's servers its own group, set hosts[i].instanceId for a server that is one of the hosts, ` +
        `or accept the change with \`pulumi config set --path '${key}[0]' ${ids[0]}\` (one entry per id: ${ids.join(", ")}).`;
}

/** One network interface of an instance, as DescribeInstances lists it. */
export interface HostInterface {
    networkInterfaceId: string;
    deviceIndex: number;
    groups: string[];
    /** The public address (an Elastic IP or an auto-assigned one), when it has one. */
    publicIp?: string;
    vpcId: string;
}

/** Instance states in which the instance is gone for hostguard (its interfaces go with it). */
const GONE_STATES = ["shutting-down", "terminated"];

/**
 * Every network interface of the instance (primary, secondary, EFA, ...) by
 * device index, or null when the instance does not exist or is terminated.
 */
export async function instanceInterfaces(client: Ec2, instanceId: string): Promise<HostInterface[] | null> {
    let out: any;
    try {
        out = await client.send(command("DescribeInstances", { InstanceIds: [instanceId] }));
    } catch (e) {
        if (isNotFound(e, ["InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"])) {
            return null;
        }
        throw e;
    }
    const instance = (out.Reservations ?? []).flatMap((r: any) => r.Instances ?? []).find((i: any) => i.InstanceId === instanceId);
    if (!instance || GONE_STATES.includes(instance.State?.Name)) {
        return null;
    }
    return (instance.NetworkInterfaces ?? []).map((n: any): HostInterface => ({
        networkInterfaceId: n.NetworkInterfaceId,
        deviceIndex: Number(n.Attachment?.DeviceIndex ?? 0),
        groups: (n.Groups ?? []).map((g: any) => g.GroupId as string),
        vpcId: n.VpcId,
        ...(n.Association?.PublicIp ? { publicIp: n.Association.PublicIp } : {}),
    })).sort((a: HostInterface, b: HostInterface) => a.deviceIndex - b.deviceIndex);
}

/** A network interface as DescribeNetworkInterfaces shows it. */
export interface InterfaceInfo {
    groups: string[];
    vpcId: string;
    /** The instance it is attached to, if any. */
    instanceId?: string;
}

/** The interface as it is now; null when it does not exist (any more). */
export async function describeInterface(client: Ec2, networkInterfaceId: string): Promise<InterfaceInfo | null> {
    let out: any;
    try {
        out = await client.send(command("DescribeNetworkInterfaces", { NetworkInterfaceIds: [networkInterfaceId] }));
    } catch (e) {
        if (isNotFound(e, ["InvalidNetworkInterfaceID.NotFound"])) {
            return null;
        }
        throw e;
    }
    const n = (out.NetworkInterfaces ?? [])[0];
    return n ? {
        groups: (n.Groups ?? []).map((g: any) => g.GroupId as string), vpcId: n.VpcId,
        ...(n.Attachment?.InstanceId ? { instanceId: n.Attachment.InstanceId as string } : {}),
    } : null;
}

/** The groups on an interface, read back from EC2; null when the interface does not exist (any more). */
export async function interfaceGroups(client: Ec2, networkInterfaceId: string): Promise<string[] | null> {
    return (await describeInterface(client, networkInterfaceId))?.groups ?? null;
}

/** The VPC's default security group (what an interface gets when nothing else is left to put on it). */
export async function defaultGroup(client: Ec2, vpcId: string): Promise<string> {
    const out = await client.send(command("DescribeSecurityGroups", {
        Filters: [{ Name: "vpc-id", Values: [vpcId] }, { Name: "group-name", Values: ["default"] }],
    }));
    const g = (out.SecurityGroups ?? [])[0];
    if (!g) {
        throw new Error(`VPC ${vpcId} has no default security group`);
    }
    return g.GroupId as string;
}

/** Same groups, whatever the order. */
export function sameGroups(a: string[], b: string[]): boolean {
    return a.length === b.length && [...a].sort().join(",") === [...b].sort().join(",");
}

/**
 * Replaces the interface's whole group set (one call: EC2 applies it at once)
 * and reads it back until it shows (eventual consistency). Once the call was
 * sent, any failure is a changedError (EC2 may have applied it and lost the
 * answer); a failed call whose change reads back counts as done.
 */
export async function setInterfaceGroups(client: Ec2, networkInterfaceId: string, groups: string[]): Promise<string[]> {
    let sent: unknown;
    try {
        await client.send(command("ModifyNetworkInterfaceAttribute", { NetworkInterfaceId: networkInterfaceId, Groups: groups }));
    } catch (e) {
        sent = e;
    }
    let now: string[] | null;
    try {
        now = await settle(() => interfaceGroups(client, networkInterfaceId), (g) => g !== null && sameGroups(g, groups), sent ? 1 : undefined);
    } catch (e) {
        throw changedError(e, `${sent ? `setting the groups of ${networkInterfaceId} failed (${errorText(sent)}), and ` : ""}reading back the groups of ${networkInterfaceId} failed: ${errorText(e)}`);
    }
    if (now === null || !sameGroups(now, groups)) {
        throw changedError(sent, sent ? `setting the groups of ${networkInterfaceId} failed: ${errorText(sent)}`
            : `network interface ${networkInterfaceId} has groups ${(now ?? []).join(", ")} after setting ${groups.join(", ")}`);
    }
    return now;
}
