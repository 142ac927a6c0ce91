// The create path (hosts[].instanceId): two dynamic resources per instance.
// The record (InterfaceRecord) only reads the groups of every network
// interface of the instance; the enforcing one (InterfaceGroups) takes them as
// an input, so the engine has checkpointed what destroy restores before the
// first EC2 change is sent, and a killed `up` cannot lose it (the record's
// own delete puts the interfaces back when the enforcing resource is not in
// the state: its create was pending when the up was killed or cancelled).
// The enforcing resource sets EVERY interface (primary, secondary with an Elastic IP, ...)
// to exactly hostguard's group plus the groups the user keeps
// (hostguard:keepSecurityGroupIds) and puts each recorded set back on destroy.
// Adding a group would not do, nor would the primary interface alone: EC2
// unions the rules of every group on an interface, and a server answers on
// each of its interfaces. Preview refuses a kept group that lets more than TCP
// 443 in from anywhere, and an interface in another VPC than hostguard:vpcId.
// The EC2 work is in ec2Reconcile.ts; this file only maps Pulumi's lifecycle
// onto it.
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "./ec2Reconcile";
import * as exposure from "./hostExposure";

/** Marks hostguard's dynamic resources among all `pulumi-nodejs:dynamic:Resource`s. */
export const INTERFACE_GROUPS_KIND = "hostguard:interface-groups";
export const INTERFACE_RECORD_KIND = "hostguard:interface-record";

/** What both resources share. */
interface InstanceRef {
    kind: string;
    region: string;
    /** aws:profile, when set. */
    profile?: string;
    instanceId: string;
}

export interface InterfaceRecordState extends InstanceRef {
    /** hostguard's created group: an interface that already carries it is refused (its original set is lost). */
    hostguardGroupId: string;
    /** Output: each interface's groups before hostguard first set them, by interface id (the interfaces of this instance when recorded). */
    originals?: Record<string, string[]>;
}

export interface InterfaceGroupsState extends InstanceRef {
    /** hostguard:vpcId: every interface must be in it. */
    vpcId: string;
    /** The whole set every interface must carry: hostguard's group first, then the kept ones. */
    groups: string[];
    /** hostguard's group's inbound rules (counted with the kept groups' in what the server lets in from anywhere). */
    ingress: ec2.WantedRule[];
    /** The record's output: what destroy restores, by interface id. */
    originals: Record<string, string[]>;
    /** Set by check (shown by preview): what the instance lets in from anywhere after the change. */
    worldReachable?: string[];
    /** Output: the primary interface (device index 0); it names the resource. */
    networkInterfaceId?: string;
    /** Output: the groups of each interface attached to the instance, as last read. */
    actual?: Record<string, string[]>;
}

const client = (s: InstanceRef) => ec2.ec2Client(s.region, s.profile);

function missingInstance(instanceId: string): Error {
    return new Error(`instance ${instanceId} (a hosts[].instanceId) does not exist, is terminated or has no network interface: `
        + "set the server's current instance id or remove it");
}

/**
 * The interfaces' sets to record, refusing one that already carries
 * hostguard's group: this stack's, or any group tagged as hostguard's
 * (another stack's, or one left by a stack whose state was lost). Recorded as
 * an original, it would be put back by this stack's destroy, and the other
 * stack's destroy would reopen a server this one believes hardened.
 */
async function recordOf(c: ec2.Ec2, s: InterfaceRecordState, interfaces: ec2.HostInterface[]): Promise<Record<string, string[]>> {
    const tagged = await ec2.hostguardTagged(c, [...new Set(interfaces.flatMap((n) => n.groups))]);
    const marked = (n: ec2.HostInterface) => n.groups.filter((g) => g === s.hostguardGroupId || tagged.includes(g));
    const changed = interfaces.filter((n) => marked(n).length > 0);
    if (changed.length > 0) {
        const ids = changed.map((n) => n.networkInterfaceId);
        const groups = [...new Set(changed.flatMap(marked))];
        const own = groups.every((g) => g === s.hostguardGroupId);
        throw new Error(`network interface ${ids.join(", ")} of instance ${s.instanceId} already carries `
            + (own ? `hostguard's group ${s.hostguardGroupId}` : `${groups.join(", ")}, a group a hostguard stack created (tag ${ec2.HOSTGUARD_TAG.key}: ${ec2.HOSTGUARD_TAG.value})`)
            + ", so its own groups are not known (another hostguard stack manages the server, a stack's state was lost, or an earlier up was interrupted "
            + "before they were recorded): destroy would leave hostguard's group on it. "
            + (own ? "If you renamed the host in hostguard:hosts (to Pulumi a new host, recorded before the old name's resources go), put the old name back, "
                + "or remove the host in one up and add it under its new name in the next. " : "")
            + "If another stack manages the server, take its instanceId out of one "
            + "of the two stacks' hosts; otherwise set its groups back to what they were before hostguard "
            + `(\`aws ec2 modify-network-interface-attribute --network-interface-id ${ids[0]} --groups sg-...\`)`
            + `${own ? "" : ` and delete ${groups.join(", ")} if no stack uses it`}, then run up again.`);
    }
    return Object.fromEntries(interfaces.map((n) => [n.networkInterfaceId, n.groups]));
}

/** The instance's interfaces, or an error naming the key. */
async function interfacesOf(c: ec2.Ec2, instanceId: string): Promise<ec2.HostInterface[]> {
    const interfaces = await ec2.instanceInterfaces(c, instanceId);
    if (interfaces === null || interfaces.length === 0) {
        throw missingInstance(instanceId);
    }
    return interfaces;
}

/**
 * Reads and records; never changes EC2. A diff that finds an interface not
 * recorded yet (attached since) is an update that records it, checkpointed
 * before the enforcing resource sets it. A refresh drops only the interfaces
 * that no longer exist (one that outlived the instance stays: destroy puts it
 * back).
 */
export const interfaceRecordProvider: pulumi.dynamic.ResourceProvider = {
    async diff(_id: string, olds: InterfaceRecordState, news: InterfaceRecordState) {
        const replaces = olds.instanceId !== news.instanceId || olds.region !== news.region ? ["instanceId"] : [];
        const now = replaces.length > 0 ? null : await ec2.instanceInterfaces(client(news), news.instanceId);
        const unrecorded = (now ?? []).some((n) => !(n.networkInterfaceId in (olds.originals ?? {})));
        return { changes: replaces.length > 0 || unrecorded || olds.profile !== news.profile || olds.hostguardGroupId !== news.hostguardGroupId, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: InterfaceRecordState) {
        const c = client(inputs);
        const originals = await recordOf(c, inputs, await interfacesOf(c, inputs.instanceId));
        return { id: `${inputs.instanceId}/record`, outs: { ...inputs, originals } };
    },

    async read(id: string, props: InterfaceRecordState) {
        const originals = await stillThere(client(props), props.originals ?? {});
        return Object.keys(originals).length === 0 ? { id: "", props: {} } : { id, props: { ...props, originals } };
    },

    async update(_id: string, olds: InterfaceRecordState, news: InterfaceRecordState) {
        const known = olds.originals ?? {};
        const c = client(news);
        const added = (await interfacesOf(c, news.instanceId)).filter((n) => !(n.networkInterfaceId in known));
        return { outs: { ...news, originals: { ...known, ...(await recordOf(c, news, added)) } } };
    },

    /**
     * Puts back each recorded interface that still carries hostguard's group.
     * Dependents go first, so after `<host>-interface-groups`' delete none
     * does and nothing is sent. When that resource is not in the state (an up
     * killed or cancelled while its create was pending: the engine drops a
     * pending create), this is what gives the interfaces their groups back.
     */
    async delete(_id: string, props: InterfaceRecordState) {
        const c = client(props);
        for (const [eni, groups] of Object.entries(props.originals ?? {})) {
            await restoreInterface(c, props.instanceId, eni, groups, props.hostguardGroupId);
        }
    },
};

/** Of RECORDED, the interfaces that still exist (wherever they are). */
async function stillThere(c: ec2.Ec2, recorded: Record<string, string[]>): Promise<Record<string, string[]>> {
    const out: Record<string, string[]> = {};
    for (const [eni, groups] of Object.entries(recorded)) {
        if ((await ec2.describeInterface(c, eni)) !== null) {
            out[eni] = groups;
        }
    }
    return out;
}

/**
 * Sets every interface of the instance to GROUPS. Every one must be in the
 * record (checked before any change). A failure once a change was sent keeps
 * the resource in the state (the engine's initialization failure), so destroy
 * can put every interface back.
 */
async function setAll(id: string | undefined, s: InterfaceGroupsState): Promise<{ id: string; outs: InterfaceGroupsState }> {
    const c = client(s);
    const interfaces = await interfacesOf(c, s.instanceId);
    const unrecorded = interfaces.filter((n) => !(n.networkInterfaceId in (s.originals ?? {})));
    if (unrecorded.length > 0) {
        throw new Error(`network interface ${unrecorded.map((n) => n.networkInterfaceId).join(", ")} was attached to ${s.instanceId} after its groups were recorded: `
            + "nothing was changed; run up again (it records the interface first)");
    }
    const primary = interfaces.find((n) => n.deviceIndex === 0) ?? interfaces[0];
    const actual: Record<string, string[]> = Object.fromEntries(interfaces.map((n) => [n.networkInterfaceId, n.groups]));
    const resourceId = id ?? `${s.instanceId}/${primary.networkInterfaceId}`;
    const outs = (): InterfaceGroupsState => ({ ...s, networkInterfaceId: primary.networkInterfaceId, actual });
    for (const n of interfaces.filter((x) => !ec2.sameGroups(x.groups, s.groups))) {
        try {
            actual[n.networkInterfaceId] = await ec2.setInterfaceGroups(c, n.networkInterfaceId, s.groups);
        } catch (e) {
            const message = `setting the groups of ${n.networkInterfaceId} (instance ${s.instanceId}) failed: ${(e as Error).message}`;
            // The call was sent (setInterfaceGroups' errors all come after it): the resource stays in the state.
            throw Object.assign(new Error(message), { id: resourceId, properties: outs(), reasons: [message] });
        }
    }
    return { id: resourceId, outs: outs() };
}

/** The groups each interface of the instance carries now, or null when the instance is gone. */
async function liveActual(s: InterfaceGroupsState): Promise<Record<string, string[]> | null> {
    const interfaces = await ec2.instanceInterfaces(client(s), s.instanceId);
    return interfaces === null ? null : Object.fromEntries(interfaces.map((n) => [n.networkInterfaceId, n.groups]));
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
            found = await exposure.openGroups(client(news), [news.instanceId], { extra: kept, replaceGroups: true, own: ec2.wantedAtoms(news.ingress ?? []) });
        } catch (e) {
            throw new Error(`reading the interfaces of ${news.instanceId} and its kept groups failed (region ${news.region}): ${(e as Error).message}`);
        }
        const failures: pulumi.dynamic.CheckFailure[] = found.missing.map((i) => ({ property: "instanceId", reason: missingInstance(i).message }));
        // EC2 refuses a group of another VPC on an interface: the up would fail halfway.
        for (const n of (found.interfaces[news.instanceId] ?? []).filter((x) => /^vpc-/.test(String(news.vpcId)) && x.vpcId !== news.vpcId)) {
            failures.push({
                property: "vpcId", reason: `network interface ${n.networkInterfaceId} of instance ${news.instanceId} is in ${n.vpcId}, not in hostguard:vpcId ${news.vpcId} `
                    + "(the created group's VPC): set hostguard:vpcId to the instance's VPC, or detach that interface",
            });
        }
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
        // Drift is read live, so a plain preview plans it (no --refresh needed).
        const actual = replaces.length > 0 ? null : await liveActual(news);
        const drift = Object.values(actual ?? olds.actual ?? {}).some((g) => !ec2.sameGroups(g, news.groups));
        const recorded = JSON.stringify(Object.keys(olds.originals ?? {}).sort()) !== JSON.stringify(Object.keys(news.originals ?? {}).sort());
        return { changes: replaces.length > 0 || drift || recorded || olds.profile !== news.profile, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: InterfaceGroupsState) {
        return setAll(undefined, inputs);
    },

    async read(id: string, props: InterfaceGroupsState) {
        const originals = await stillThere(client(props), props.originals ?? {});
        const actual = await liveActual(props);
        if (actual === null && Object.keys(originals).length === 0) {
            // The instance and every recorded interface are gone: nothing is left to set or restore.
            return { id: "", props: {} };
        }
        return { id, props: { ...props, originals, actual: actual ?? {} } };
    },

    async update(id: string, _olds: InterfaceGroupsState, news: InterfaceGroupsState) {
        return { outs: (await setAll(id, news)).outs };
    },

    async delete(_id: string, props: InterfaceGroupsState) {
        const c = client(props);
        for (const [eni, groups] of Object.entries(props.originals ?? {})) {
            await restoreInterface(c, props.instanceId, eni, groups);
        }
    },
};

/**
 * Puts GROUPS back on ENI if it is still on INSTANCE_ID or detached (one moved
 * to another server is left as it is). Groups deleted since are left out; when
 * none is left it gets its VPC's default group. With ONLY_IF_CARRYING (the
 * record's delete), an interface that does not carry that group is left as it
 * is, silently: hostguard's change is not on it. An interface that is gone or
 * moved is named by the record's delete alone: it runs on every destroy, after
 * the enforcing resource's, so the line is said once.
 */
async function restoreInterface(c: ec2.Ec2, instanceId: string, eni: string, groups: string[], onlyIfCarrying?: string): Promise<void> {
    const record = onlyIfCarrying !== undefined;
    const now = await ec2.describeInterface(c, eni);
    if (now === null) {
        if (record) {
            console.warn(`hostguard: network interface ${eni} of ${instanceId} no longer exists (the instance was terminated, or the interface deleted): `
                + `its groups before hostguard (${groups.join(", ")}) were not restored`);
        }
        return;
    }
    if (now.instanceId !== undefined && now.instanceId !== instanceId) {
        if (record) {
            console.warn(`hostguard: network interface ${eni} moved from ${instanceId} to ${now.instanceId}: its groups (${now.groups.join(", ")}) are left as they are `
                + `(its groups on ${instanceId} were ${groups.join(", ")})`);
        }
        return;
    }
    if (record && !now.groups.includes(onlyIfCarrying)) {
        return;
    }
    let alive = await ec2.existingGroups(c, groups);
    const gone = groups.filter((g) => !alive.includes(g));
    if (gone.length > 0) {
        console.warn(`hostguard: ${gone.join(", ")} (on ${eni} before hostguard) no longer exist${gone.length === 1 ? "s" : ""}: not put back`);
    }
    if (alive.length === 0) {
        alive = [await ec2.defaultGroup(c, now.vpcId)];
        console.warn(`hostguard: none of ${eni}'s original groups exists any more: it gets ${now.vpcId}'s default group ${alive[0]} (hostguard's group must come off before it is deleted)`);
    }
    try {
        await ec2.setInterfaceGroups(c, eni, alive);
    } catch (e) {
        if (!ec2.isNotFound(e, ["InvalidNetworkInterfaceID.NotFound"]) && !ec2.isNotFound((e as { cause?: unknown }).cause, ["InvalidNetworkInterfaceID.NotFound"])) {
            throw e;
        }
    }
}

export interface InterfaceRecordArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    instanceId: pulumi.Input<string>;
    hostguardGroupId: pulumi.Input<string>;
}

export class InterfaceRecord extends pulumi.dynamic.Resource {
    declare public readonly originals: pulumi.Output<Record<string, string[]>>;

    constructor(name: string, args: InterfaceRecordArgs, opts?: pulumi.CustomResourceOptions) {
        super(interfaceRecordProvider, name, { kind: INTERFACE_RECORD_KIND, ...args, originals: undefined }, opts);
    }
}

export interface InterfaceGroupsArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    instanceId: pulumi.Input<string>;
    vpcId: pulumi.Input<string>;
    groups: pulumi.Input<pulumi.Input<string>[]>;
    ingress: ec2.WantedRule[];
    /** The record's output. */
    originals: pulumi.Input<Record<string, string[]>>;
}

export class InterfaceGroups extends pulumi.dynamic.Resource {
    declare public readonly networkInterfaceId: pulumi.Output<string>;
    declare public readonly originals: pulumi.Output<Record<string, string[]>>;
    declare public readonly actual: pulumi.Output<Record<string, string[]>>;

    constructor(name: string, args: InterfaceGroupsArgs, opts?: pulumi.CustomResourceOptions) {
        super(interfaceGroupsProvider, name, { kind: INTERFACE_GROUPS_KIND, ...args, networkInterfaceId: undefined, actual: undefined }, opts);
    }
}
