// The create path (hosts[].instanceId): a dynamic resource whose provider sets
// EVERY network interface of the instance (primary, secondary with an Elastic
// IP, ...) to exactly hostguard's group plus the groups the user keeps
// (hostguard:keepSecurityGroupIds), recording each interface's set and putting
// it back on destroy. Adding a group would not do, nor would the primary
// interface alone: EC2 unions the rules of every group on an interface, and a
// server answers on each of its interfaces. Preview refuses a kept group that
// lets more than TCP 443 in from anywhere. The EC2 work is in ec2Reconcile.ts;
// this file only maps Pulumi's lifecycle onto it.
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "./ec2Reconcile";
import * as exposure from "./hostExposure";

/** Marks hostguard's dynamic resource among all `pulumi-nodejs:dynamic:Resource`s. */
export const INTERFACE_GROUPS_KIND = "hostguard:interface-groups";

export interface InterfaceGroupsState {
    kind: string;
    region: string;
    /** aws:profile, when set. */
    profile?: string;
    instanceId: string;
    /** The whole set every interface must carry: hostguard's group first, then the kept ones. */
    groups: string[];
    /** Set by check (shown by preview): what the instance lets in from anywhere after the change. */
    worldReachable?: string[];
    /** Output: the primary interface (device index 0); it names the resource. */
    networkInterfaceId?: string;
    /** Output of stacks before issue 24: the primary interface's groups before the first up. */
    originalGroups?: string[];
    /** Output: each interface's groups before hostguard first set them (restored on destroy), by interface id. */
    originals?: Record<string, string[]>;
    /** Output: each attached interface's groups as last read. */
    actual?: Record<string, string[]>;
    /** Output: the primary interface's groups as last read (as before issue 24). */
    actualGroups?: string[];
}

const client = (s: InterfaceGroupsState) => ec2.ec2Client(s.region, s.profile);

/** What destroy restores, also from a state written before every interface was recorded. */
function recorded(s: InterfaceGroupsState): Record<string, string[]> {
    const old = s.networkInterfaceId && s.originalGroups ? { [s.networkInterfaceId]: s.originalGroups } : {};
    return { ...old, ...(s.originals ?? {}) };
}

/**
 * Sets every interface of the instance to GROUPS, recording the set of each
 * interface not recorded yet (a new secondary interface is recorded the first
 * time it is seen). A failure after the first change keeps what was recorded
 * in the state (the engine's initialization failure).
 */
async function setAll(id: string | undefined, s: InterfaceGroupsState, known: Record<string, string[]>): Promise<{ id: string; outs: InterfaceGroupsState }> {
    const c = client(s);
    const interfaces = await ec2.instanceInterfaces(c, s.instanceId);
    if (interfaces === null || interfaces.length === 0) {
        throw new Error(`instance ${s.instanceId} (a hosts[].instanceId) does not exist, is terminated or has no network interface: `
            + "set the server's current instance id or remove it");
    }
    const primary = interfaces.find((n) => n.deviceIndex === 0) ?? interfaces[0];
    const originals = { ...known };
    for (const n of interfaces) {
        originals[n.networkInterfaceId] ??= n.groups;
    }
    const actual: Record<string, string[]> = Object.fromEntries(interfaces.map((n) => [n.networkInterfaceId, n.groups]));
    const resourceId = id ?? `${s.instanceId}/${primary.networkInterfaceId}`;
    const outs = (): InterfaceGroupsState => ({
        ...s, networkInterfaceId: s.networkInterfaceId ?? primary.networkInterfaceId, originalGroups: s.originalGroups ?? originals[primary.networkInterfaceId],
        originals, actual, actualGroups: actual[primary.networkInterfaceId],
    });
    let changed = 0;
    for (const n of interfaces.filter((x) => !ec2.sameGroups(x.groups, s.groups))) {
        try {
            actual[n.networkInterfaceId] = await ec2.setInterfaceGroups(c, n.networkInterfaceId, s.groups);
            changed += 1;
        } catch (e) {
            const message = `setting the groups of ${n.networkInterfaceId} (instance ${s.instanceId}) failed: ${(e as Error).message}`;
            if (changed > 0 || ec2.wasChanged(e)) {
                // Keeps `originals` in the state: destroy can still put every interface back.
                throw Object.assign(new Error(message), { id: resourceId, properties: outs(), reasons: [message] });
            }
            throw new Error(message);
        }
    }
    return { id: resourceId, outs: outs() };
}

export const interfaceGroupsProvider: pulumi.dynamic.ResourceProvider = {
    async check(_olds: InterfaceGroupsState, news: InterfaceGroupsState) {
        // hostguard's own group (groups[0]) is unknown until created; the kept ones are configured ids.
        const kept = (news.groups ?? []).slice(1).filter((g) => /^sg-/.test(String(g)));
        if (!/^i-/.test(String(news.instanceId))) {
            return { inputs: news, failures: [] };
        }
        let found: Awaited<ReturnType<typeof exposure.openGroups>>;
        try {
            found = await exposure.openGroups(client(news), [news.instanceId], [], kept, true);
        } catch (e) {
            throw new Error(`reading the interfaces of ${news.instanceId} and its kept groups failed (region ${news.region}): ${(e as Error).message}`);
        }
        const failures: pulumi.dynamic.CheckFailure[] = found.missing.map((i) => ({
            property: "instanceId", reason: `instance ${i} (a hosts[].instanceId) does not exist or is terminated: set the server's current instance id or remove it`,
        }));
        // A kept group is on every interface: name it once, with the first interface.
        const byGroup = found.open.filter((o, i, all) => all.findIndex((x) => x.groupId === o.groupId) === i);
        const refusal = exposure.openGroupsRefusal(byGroup, "A kept group stays on every interface of the server beside hostguard's: "
            + "remove those rules from it, or take it out of hostguard:keepSecurityGroupIds.");
        if (refusal) {
            failures.push({ property: "groups", reason: refusal });
        }
        // Shown by preview: what the instance lets in from anywhere once its interfaces carry [hostguard, kept...].
        return { inputs: { ...news, worldReachable: found.reachable[news.instanceId] ?? [] }, failures };
    },

    async diff(_id: string, olds: InterfaceGroupsState, news: InterfaceGroupsState) {
        const replaces = olds.instanceId !== news.instanceId || olds.region !== news.region ? ["instanceId"] : [];
        // A state from before every interface was read (no `actual`) is updated once, to record and set them all.
        const drift = olds.actual === undefined || Object.values(olds.actual).some((g) => !ec2.sameGroups(g, news.groups));
        return { changes: replaces.length > 0 || drift || olds.profile !== news.profile, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: InterfaceGroupsState) {
        return setAll(undefined, inputs, {});
    },

    async read(id: string, props: InterfaceGroupsState) {
        const interfaces = await ec2.instanceInterfaces(client(props), props.instanceId);
        if (interfaces === null) {
            // Terminated or gone: its interfaces went with it; the resource is dropped.
            return { id: "", props: {} };
        }
        const actual = Object.fromEntries(interfaces.map((n) => [n.networkInterfaceId, n.groups]));
        const primary = interfaces.find((n) => n.deviceIndex === 0);
        return { id, props: { ...props, actual, actualGroups: primary ? primary.groups : props.actualGroups } };
    },

    async update(id: string, olds: InterfaceGroupsState, news: InterfaceGroupsState) {
        const r = await setAll(id, { ...news, networkInterfaceId: olds.networkInterfaceId, originalGroups: olds.originalGroups }, recorded(olds));
        return { outs: r.outs };
    },

    async delete(_id: string, props: InterfaceGroupsState) {
        const originals = recorded(props);
        if (Object.keys(originals).length === 0) {
            throw new Error(`no recorded groups of ${props.instanceId}'s interfaces in the state: nothing to restore them from; remove the resource with \`pulumi state delete\``);
        }
        const c = client(props);
        for (const [eni, groups] of Object.entries(originals)) {
            if ((await ec2.interfaceGroups(c, eni)) === null) {
                console.warn(`hostguard: network interface ${eni} of ${props.instanceId} no longer exists; nothing to restore on it`);
                continue;
            }
            const alive = await ec2.existingGroups(c, groups);
            const gone = groups.filter((g) => !alive.includes(g));
            if (gone.length > 0) {
                console.warn(`hostguard: ${gone.join(", ")} (on ${eni} before hostguard) no longer exist${gone.length === 1 ? "s" : ""}: not put back`);
            }
            if (alive.length === 0) {
                console.warn(`hostguard: none of ${eni}'s original groups exists any more; it keeps its current groups`);
                continue;
            }
            try {
                await ec2.setInterfaceGroups(c, eni, alive);
            } catch (e) {
                if (ec2.isNotFound(e, ["InvalidNetworkInterfaceID.NotFound"])) {
                    continue;
                }
                throw e;
            }
        }
    },
};

export interface InterfaceGroupsArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    instanceId: pulumi.Input<string>;
    groups: pulumi.Input<pulumi.Input<string>[]>;
}

export class InterfaceGroups extends pulumi.dynamic.Resource {
    public readonly networkInterfaceId!: pulumi.Output<string>;
    public readonly originalGroups!: pulumi.Output<string[]>;
    public readonly actualGroups!: pulumi.Output<string[]>;
    public readonly originals!: pulumi.Output<Record<string, string[]>>;
    public readonly actual!: pulumi.Output<Record<string, string[]>>;

    constructor(name: string, args: InterfaceGroupsArgs, opts?: pulumi.CustomResourceOptions) {
        super(interfaceGroupsProvider, name, {
            kind: INTERFACE_GROUPS_KIND, ...args, networkInterfaceId: undefined, originalGroups: undefined, originals: undefined, actual: undefined,
            actualGroups: undefined,
        }, opts);
    }
}
