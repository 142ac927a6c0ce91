// What hostguard changes in EC2 that it did not create, as plain functions over
// an EC2 client (AWS SDK for JavaScript v3): an adopted group's inbound rules
// and an instance's primary network interface's groups. Each change records
// what was there so that it can be put back exactly. The dynamic providers
// (adoptedGroup.ts, interfaceGroups.ts) only call these; the moto tests drive
// them directly. Endpoint and credentials come from the SDK's standard chain
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2, AWS_PROFILE, instance roles, ...).
//
// These functions are serialized into the Pulumi state with the dynamic
// providers, so they capture nothing but each other and load the SDK with
// `require` when they run.

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

/** The part of an EC2 client used here: `send(command)`. */
export interface Ec2 {
    send(command: unknown): Promise<any>;
}

/** A client for REGION; endpoint and credentials from the SDK's default chain, never from inputs. */
export function ec2Client(region: string): Ec2 {
    const sdk = require("@aws-sdk/client-ec2");
    return new sdk.EC2Client({ region });
}

function command(name: string, input: Record<string, unknown>): unknown {
    const sdk = require("@aws-sdk/client-ec2");
    return new sdk[`${name}Command`](input);
}

const PROTOCOL_NAMES: Record<string, string> = { "6": "tcp", "17": "udp", "1": "icmp", "58": "icmpv6", all: "-1" };

function normalProtocol(p: unknown): string {
    const s = String(p ?? "").toLowerCase();
    return PROTOCOL_NAMES[s] ?? s;
}

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
 * What turns ACTUAL into WANTED: every actual permission that is not wanted
 * (same source, ports and description) is revoked, every wanted one missing is
 * authorized. A wanted rule present with another description is revoked and
 * authorized again (EC2 matches on everything but the description).
 */
export function ingressDiff(actual: RuleAtom[], wanted: RuleAtom[]): { revoke: RuleAtom[]; authorize: RuleAtom[] } {
    const same = (a: RuleAtom, b: RuleAtom) => ruleKey(a) === ruleKey(b) && (a.description ?? "") === (b.description ?? "");
    const revoke = actual.filter((a) => !wanted.some((w) => same(a, w)));
    const kept = actual.filter((a) => !revoke.includes(a));
    const authorize = wanted.filter((w) => !kept.some((a) => same(a, w)));
    return { revoke, authorize };
}

/** True when both lists hold the same permissions with the same descriptions. */
export function sameAtoms(a: RuleAtom[], b: RuleAtom[]): boolean {
    const d = ingressDiff(a, b);
    return d.revoke.length === 0 && d.authorize.length === 0;
}

/** The group's inbound rules as they are now. */
export async function describeIngress(client: Ec2, groupId: string): Promise<RuleAtom[]> {
    const out = await client.send(command("DescribeSecurityGroups", { GroupIds: [groupId] }));
    const group = (out.SecurityGroups ?? []).find((g: any) => g.GroupId === groupId);
    if (!group) {
        throw new Error(`security group ${groupId} not found`);
    }
    return atomsOf(group.IpPermissions, group.OwnerId);
}

async function applyIngress(client: Ec2, groupId: string, revoke: RuleAtom[], authorize: RuleAtom[]): Promise<void> {
    if (revoke.length > 0) {
        await client.send(command("RevokeSecurityGroupIngress", { GroupId: groupId, IpPermissions: permissionsOf(revoke) }));
    }
    if (authorize.length > 0) {
        await client.send(command("AuthorizeSecurityGroupIngress", { GroupId: groupId, IpPermissions: permissionsOf(authorize) }));
    }
}

export interface ReconcileResult {
    /** The inbound rules before the change (what a restore puts back). */
    before: RuleAtom[];
    /** The inbound rules after it, read back from EC2. */
    after: RuleAtom[];
    revoked: RuleAtom[];
    authorized: RuleAtom[];
}

/**
 * Makes the group's inbound rules exactly WANTED. Revokes first (a group may
 * hold at most 60 rules per address family, and a narrower group is the safe
 * side), then authorizes. When the authorize fails, the revoked rules are put
 * back so the group is not left half-changed, and the error says so.
 */
export async function reconcileIngress(client: Ec2, groupId: string, wanted: RuleAtom[]): Promise<ReconcileResult> {
    const before = await describeIngress(client, groupId);
    const { revoke, authorize } = ingressDiff(before, wanted);
    await applyIngress(client, groupId, revoke, []);
    try {
        await applyIngress(client, groupId, [], authorize);
    } catch (e) {
        let rollback = "its revoked rules were put back";
        try {
            await applyIngress(client, groupId, [], revoke);
        } catch (r) {
            rollback = `putting its revoked rules back failed too (${(r as Error).message}); run the command again`;
        }
        throw new Error(`changing the inbound rules of ${groupId} failed: ${(e as Error).message}; ${rollback}`);
    }
    const after = await describeIngress(client, groupId);
    if (!sameAtoms(after, wanted)) {
        throw new Error(`the inbound rules of ${groupId} do not read back as wanted: ${JSON.stringify(ingressDiff(after, wanted))}`);
    }
    return { before, after, revoked: revoke, authorized: authorize };
}

/** Puts the group's inbound rules back to ORIGINAL exactly (a reconcile towards the recorded set). */
export async function restoreIngress(client: Ec2, groupId: string, original: RuleAtom[]): Promise<ReconcileResult> {
    return reconcileIngress(client, groupId, original);
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

/** An instance's primary network interface (device index 0) and the groups on it. */
export async function primaryInterface(client: Ec2, instanceId: string): Promise<{ networkInterfaceId: string; groups: string[] }> {
    const out = await client.send(command("DescribeNetworkInterfaces", {
        Filters: [{ Name: "attachment.instance-id", Values: [instanceId] }],
    }));
    const primary = (out.NetworkInterfaces ?? []).find((n: any) => n.Attachment?.InstanceId === instanceId && Number(n.Attachment?.DeviceIndex) === 0);
    if (!primary) {
        throw new Error(`instance ${instanceId} has no primary network interface (device index 0)`);
    }
    return { networkInterfaceId: primary.NetworkInterfaceId, groups: (primary.Groups ?? []).map((g: any) => g.GroupId as string) };
}

/** The groups on an interface, read back from EC2. */
export async function interfaceGroups(client: Ec2, networkInterfaceId: string): Promise<string[]> {
    const out = await client.send(command("DescribeNetworkInterfaces", { NetworkInterfaceIds: [networkInterfaceId] }));
    const n = (out.NetworkInterfaces ?? [])[0];
    if (!n) {
        throw new Error(`network interface ${networkInterfaceId} not found`);
    }
    return (n.Groups ?? []).map((g: any) => g.GroupId as string);
}

/** Same groups, whatever the order. */
export function sameGroups(a: string[], b: string[]): boolean {
    return a.length === b.length && [...a].sort().join(",") === [...b].sort().join(",");
}

/** Replaces the interface's whole group set (one call: EC2 applies it at once) and reads it back. */
export async function setInterfaceGroups(client: Ec2, networkInterfaceId: string, groups: string[]): Promise<string[]> {
    await client.send(command("ModifyNetworkInterfaceAttribute", { NetworkInterfaceId: networkInterfaceId, Groups: groups }));
    const now = await interfaceGroups(client, networkInterfaceId);
    if (!sameGroups(now, groups)) {
        throw new Error(`network interface ${networkInterfaceId} has groups ${now.join(", ")} after setting ${groups.join(", ")}`);
    }
    return now;
}
