// What the whole server lets in from anywhere, not what one group says: EC2
// unions the rules of every group on every network interface of an instance,
// so a second group on the interface, a group on a secondary interface (with an
// Elastic IP) or a kept group can keep the server open whatever hostguard's
// group holds. The SPEC allows only TCP 443 from anywhere. These functions read
// every group on every interface of the stack's instances and name what else
// is open; the dynamic providers' `check` (preview) refuses it.
//
// Serialized with the dynamic providers like ec2Reconcile.ts: they capture
// nothing but each other.
import * as ec2 from "./ec2Reconcile";
import type { RuleAtom } from "./ec2Reconcile";

/** Sources that are the whole internet. */
const WORLD = ["0.0.0.0/0", "::/0"];

/** True when the permission is open to the whole internet and is not exactly TCP 443. */
export function worldOpenBeyond443(a: RuleAtom): boolean {
    const world = (a.kind === "cidr4" || a.kind === "cidr6") && WORLD.includes(a.source);
    return world && !(a.protocol === "tcp" && a.fromPort === 443 && a.toPort === 443);
}

/** A permission in words: `tcp 80 from 0.0.0.0/0`, `all traffic from ::/0`, `udp 1000-2000 from ...`. */
export function ruleText(a: RuleAtom): string {
    const what = a.protocol === "-1" ? "all traffic"
        : a.fromPort === undefined ? `protocol ${a.protocol}`
            : `${a.protocol} ${a.fromPort === a.toPort ? a.fromPort : `${a.fromPort}-${a.toPort}`}`;
    return `${what} from ${a.source}${a.description ? ` ("${a.description}")` : ""}`;
}

/** A group found open beyond 443 on an instance, and where. */
export interface OpenGroup {
    instanceId: string;
    networkInterfaceId: string;
    publicIp?: string;
    groupId: string;
    rules: RuleAtom[];
}

/** The world-reachable ports of a set of permissions (sorted, in words): what the server lets in from anywhere. */
export function worldPorts(atoms: RuleAtom[]): string[] {
    const world = atoms.filter((a) => (a.kind === "cidr4" || a.kind === "cidr6") && WORLD.includes(a.source));
    return [...new Set(world.map((a) => (a.protocol === "-1" ? "all traffic"
        : a.fromPort === undefined ? `protocol ${a.protocol}`
            : `${a.protocol} ${a.fromPort === a.toPort ? a.fromPort : `${a.fromPort}-${a.toPort}`}`)))].sort();
}

/**
 * Reads every group on every interface of each instance, except SKIP (the
 * groups hostguard sets itself: their rules become hostguard's), and returns
 * those open to the internet beyond TCP 443, with the instances that do not
 * exist, and what each instance lets in from anywhere once hostguard's change
 * is made (`reachable`, the preview shows it). EXTRA groups are read as if on
 * every interface of every instance (a created group's kept groups, before
 * they are put there).
 */
export async function openGroups(client: ec2.Ec2, instanceIds: string[], skip: string[], extra: string[] = [], replaceGroups = false):
    Promise<{ open: OpenGroup[]; missing: string[]; reachable: Record<string, string[]> }> {
    const open: OpenGroup[] = [];
    const missing: string[] = [];
    // hostguard's own rules let only tcp 443 in from anywhere (the validator refuses a whole-internet CIDR elsewhere).
    const reachable: Record<string, string[]> = {};
    const rules = new Map<string, RuleAtom[] | null>();
    const rulesOf = async (groupId: string) => {
        if (!rules.has(groupId)) {
            rules.set(groupId, await ec2.findIngress(client, groupId));
        }
        return rules.get(groupId)!;
    };
    for (const instanceId of instanceIds) {
        const interfaces = await ec2.instanceInterfaces(client, instanceId);
        if (interfaces === null) {
            missing.push(instanceId);
            continue;
        }
        const seen: RuleAtom[] = [];
        for (const n of interfaces) {
            // On the create path the interface's groups are replaced: only the kept ones stay.
            const groups = [...new Set([...(replaceGroups ? [] : n.groups), ...extra])].filter((g) => !skip.includes(g));
            for (const groupId of groups) {
                seen.push(...((await rulesOf(groupId)) ?? []));
                const bad = ((await rulesOf(groupId)) ?? []).filter(worldOpenBeyond443);
                if (bad.length > 0) {
                    open.push({ instanceId, networkInterfaceId: n.networkInterfaceId, ...(n.publicIp ? { publicIp: n.publicIp } : {}), groupId, rules: bad });
                }
            }
        }
        reachable[instanceId] = [...new Set(["tcp 443", ...worldPorts(seen)])].sort();
    }
    return { open, missing, reachable };
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
    const ports = worldPorts(open.flatMap((o) => o.rules));
    return `the server would stay reachable from anywhere on ${["tcp 443", ...ports].join(", ")}, not only tcp 443 (EC2 unions every group `
        + `on every interface): ${lines.join("; ")}. ${how}`;
}
