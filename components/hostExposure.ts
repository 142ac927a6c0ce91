// What the whole server lets in from anywhere, not what one group says: EC2
// unions the rules of every group on every network interface of an instance,
// so a second group on the interface, a group on a secondary interface (with an
// Elastic IP) or a kept group can keep the server open whatever hostguard's
// group holds. The SPEC allows only TCP 443 from anywhere. "From anywhere" is
// cidr.ts's worldOpenings (the union rule: 0.0.0.0/1 + 128.0.0.0/1 is the
// world), over every rule of every group of the instance, hostguard's own
// included. These functions read the groups live and name what else is open;
// the dynamic providers' `check` (preview) refuses it.
//
// Serialized with the dynamic providers like ec2Reconcile.ts: they capture
// nothing but each other.
import * as cidr from "./cidr";
import * as ec2 from "./ec2Reconcile";
import type { RuleAtom } from "./ec2Reconcile";

/** A permission as cidr.ts's reachability sees it (a group or prefix list source counts as none). */
export function inboundOf(a: RuleAtom): cidr.Inbound {
    return { protocol: a.protocol, fromPort: a.fromPort, toPort: a.toPort, sources: a.kind === "cidr4" || a.kind === "cidr6" ? [a.source] : [] };
}

/** A permission in words: `tcp 80 from 0.0.0.0/0`, `all traffic from ::/0`, `udp 1000-2000 from ...`. */
export function ruleText(a: RuleAtom): string {
    return `${cidr.rangeText(a)} from ${a.source}${a.description ? ` ("${a.description}")` : ""}`;
}

/** The world-reachable ranges of a set of permissions, in words, sorted: what the server lets in from anywhere. */
export function worldPorts(atoms: RuleAtom[]): string[] {
    return [...new Set(cidr.worldOpenings(atoms.map(inboundOf)).map(cidr.rangeText))].sort();
}

/** A group whose rules make the server open to the world beyond 443, and where. */
export interface OpenGroup {
    instanceId: string;
    networkInterfaceId: string;
    publicIp?: string;
    groupId: string;
    rules: RuleAtom[];
}

/** What openGroups reads. */
export interface OpenGroupsOptions {
    /** Groups hostguard sets itself (their rules become OWN). */
    skip?: string[];
    /** Groups read as if on every interface (a created group's kept groups, before they are put there). */
    extra?: string[];
    /** The create path: an interface's own groups are replaced, only EXTRA stays. */
    replaceGroups?: boolean;
    /** hostguard's rules, on every interface: counted in the union, never named as the culprit. */
    own?: RuleAtom[];
}

/**
 * Reads every group on every interface of each instance and returns, per
 * instance, what it lets in from anywhere once hostguard's change is made
 * (`reachable`, the preview shows it), the groups that open it beyond TCP 443
 * (each rule of another group that admits part of such a range, from a CIDR),
 * the instances that do not exist, and each instance's interfaces.
 */
export async function openGroups(client: ec2.Ec2, instanceIds: string[], opts: OpenGroupsOptions = {}):
    Promise<{ open: OpenGroup[]; missing: string[]; reachable: Record<string, string[]>; interfaces: Record<string, ec2.HostInterface[]> }> {
    const open: OpenGroup[] = [];
    const missing: string[] = [];
    const reachable: Record<string, string[]> = {};
    const found: Record<string, ec2.HostInterface[]> = {};
    const rules = new Map<string, RuleAtom[]>();
    const rulesOf = async (groupId: string) => {
        if (!rules.has(groupId)) {
            rules.set(groupId, (await ec2.findIngress(client, groupId)) ?? []);
        }
        return rules.get(groupId)!;
    };
    for (const instanceId of instanceIds) {
        const interfaces = await ec2.instanceInterfaces(client, instanceId);
        if (interfaces === null) {
            missing.push(instanceId);
            continue;
        }
        found[instanceId] = interfaces;
        const seen: Array<{ n: ec2.HostInterface; groupId: string; rule: RuleAtom }> = [];
        for (const n of interfaces) {
            const groups = [...new Set([...(opts.replaceGroups ? [] : n.groups), ...(opts.extra ?? [])])].filter((g) => !(opts.skip ?? []).includes(g));
            for (const groupId of groups) {
                seen.push(...(await rulesOf(groupId)).map((rule) => ({ n, groupId, rule })));
            }
        }
        const ranges = cidr.worldOpenings([...(opts.own ?? []), ...seen.map((s) => s.rule)].map(inboundOf));
        reachable[instanceId] = [...new Set(["tcp 443", ...ranges.map(cidr.rangeText)])].sort();
        const beyond = ranges.filter((r) => !cidr.isHttpsOnly(r));
        const culprits = seen.filter((s) => inboundOf(s.rule).sources.length > 0 && beyond.some((r) => cidr.admits(inboundOf(s.rule), r)));
        for (const s of culprits) {
            const at = open.find((o) => o.instanceId === instanceId && o.networkInterfaceId === s.n.networkInterfaceId && o.groupId === s.groupId);
            if (at) {
                at.rules.push(s.rule);
            } else {
                open.push({ instanceId, networkInterfaceId: s.n.networkInterfaceId, ...(s.n.publicIp ? { publicIp: s.n.publicIp } : {}), groupId: s.groupId, rules: [s.rule] });
            }
        }
    }
    return { open, missing, reachable, interfaces: found };
}

/**
 * The refusal for OPEN, or "" when nothing is open beyond 443. HOW says what
 * the user can do (it differs between the adopted and the created path).
 */
export function openGroupsRefusal(open: OpenGroup[], how: string): string {
    if (open.length === 0) {
        return "";
    }
    const lines = open.map((o) => `group ${o.groupId} on interface ${o.networkInterfaceId}${o.publicIp ? ` (public ${o.publicIp})` : ""} of instance ${o.instanceId} `
        + `lets in ${o.rules.map(ruleText).join(", ")}`);
    const ports = worldPorts(open.flatMap((o) => o.rules)).filter((p) => p !== "tcp 443");
    return `the server would stay reachable from anywhere on ${["tcp 443", ...ports].join(", ")}, not only tcp 443 (EC2 unions every group `
        + `on every interface, and sources that together cover more than a /16 of public IPv4 or a /32 of public IPv6 count as anywhere): ${lines.join("; ")}. ${how}`;
}
