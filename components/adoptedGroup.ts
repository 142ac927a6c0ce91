// Adopting an existing security group (hostguard:securityGroupId): two dynamic
// resources. The record (AdoptedGroupRecord) only reads the group's inbound
// rules; the enforcing one (AdoptedGroupIngress) depends on it, so the engine
// has checkpointed what destroy restores before the first EC2 change is sent,
// and a killed `up` (kill -9, a cancelled job) cannot lose it. The enforcing
// resource makes the group's inbound rules exactly hostguard's and puts the
// recorded ones back on destroy; the record's own delete does the same when
// the enforcing resource is not in the state (its create was pending when the
// up was killed or cancelled). Preview refuses a group that
// also sits on a server outside the stack (a host just removed from the stack
// is a warning), and any other group on any
// interface of the stack's instances that lets more than TCP 443 in from
// anywhere (hostExposure.ts). The EC2 work is in ec2Reconcile.ts;
// this file only maps Pulumi's create/read/diff/update/delete onto it.
// Egress is left as the group has it.
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "./ec2Reconcile";
import type { RuleAtom, WantedRule } from "./ec2Reconcile";
import * as exposure from "./hostExposure";

/** Marks hostguard's dynamic resource among all `pulumi-nodejs:dynamic:Resource`s (the policy pack reads it). */
export const ADOPTED_GROUP_KIND = "hostguard:adopted-group-ingress";
/** Marks the record of the adopted group's rules before hostguard's first change. */
export const ADOPTED_GROUP_RECORD_KIND = "hostguard:adopted-group-record";
/** The opt-in: instances (or interfaces) outside the stack that may carry the adopted group. */
export const SHARED_INSTANCES_KEY = "hostguard:sharedSecurityGroupInstances";

export interface AdoptedGroupState {
    kind: string;
    region: string;
    /** aws:profile, when set (the SDK reads the profile's credentials, role and region settings). */
    profile?: string;
    groupId: string;
    /** hostguard's inbound rules: what the group must have. */
    ingress: WantedRule[];
    /** The stack's hosts[].instanceId: they may carry the group. */
    stackInstanceIds: string[];
    /** hostguard:sharedSecurityGroupInstances. */
    sharedInstances: string[];
    /**
     * Set by check: instances that were hosts of the stack (an earlier
     * stackInstanceIds) and still carry the group. Removing a host leaves its
     * server with the group, so its inbound rules stay hostguard's: preview
     * warns, naming the instance and how to take the group off, and does not
     * refuse it as a server outside the stack. One that no longer carries the
     * group drops out (put back by hand, it is refused like any other).
     */
    removedInstances?: string[];
    /** Set by check (shown by preview): per stack instance, what it lets in from anywhere after the change, every group of every interface counted. */
    worldReachable?: Record<string, string[]>;
    /** The group's inbound rules before the first up (what destroy restores): the record's output. */
    original: RuleAtom[];
    /**
     * Output: the group's inbound rules as last read, by `protocol|ports|kind|source`
     * (unique within a group), so a refresh shows an added rule as one added key.
     */
    actual?: Record<string, RuleAtom>;
}

function byKey(atoms: RuleAtom[]): Record<string, RuleAtom> {
    return Object.fromEntries(atoms.map((a) => [ec2.ruleKey(a), a]));
}

const client = (s: AdoptedGroupState) => ec2.ec2Client(s.region, s.profile);

/**
 * The guard: `refusal` is "" when no interface outside the stack (and not
 * accepted) carries the group. FORMER are instances that were hosts of the
 * stack: those still carrying the group are `removed` (not refused), each
 * with a `warnings` line.
 */
async function guard(s: AdoptedGroupState, former: string[]): Promise<{ refusal: string; removed: string[]; warnings: string[] }> {
    const users = await ec2.interfacesCarrying(client(s), s.groupId);
    const stack = s.stackInstanceIds ?? [];
    const accepted = [...stack, ...(s.sharedInstances ?? [])];
    const kept = users.filter((u) => u.instanceId !== undefined && former.includes(u.instanceId) && !accepted.includes(u.instanceId));
    const removed = [...new Set(kept.map((u) => u.instanceId as string))].sort();
    const warnings = kept.map((u) => `hostguard: warning: instance ${u.instanceId} is no longer a host of this stack (removed from hostguard:hosts) `
        + `but its interface ${u.networkInterfaceId} still carries the adopted group ${s.groupId}, so its inbound rules stay hostguard's. `
        + `To give that server other rules, take the group off it: \`aws ec2 modify-network-interface-attribute --network-interface-id ${u.networkInterfaceId} `
        + `--groups sg-...\` (its other groups), or set hostguard:securityGroupId elsewhere.`);
    const refusal = ec2.sharedGroupRefusal(s.groupId, ec2.foreignUsers(users, stack, [...(s.sharedInstances ?? []), ...removed]), SHARED_INSTANCES_KEY);
    return { refusal, removed, warnings };
}

/**
 * The whole-host check: every other group on every interface of the stack's
 * instances, read live, with hostguard's rules; "" when only 443 is open. An
 * instance that does not carry the adopted group is refused: hostguard's rules
 * would not be on it.
 */
async function hostRefusals(s: AdoptedGroupState): Promise<{ refusals: string[]; reachable: Record<string, string[]> }> {
    const { open, missing, reachable, interfaces } = await exposure.openGroups(client(s), s.stackInstanceIds ?? [],
        { skip: [s.groupId], own: ec2.wantedAtoms(s.ingress ?? []) });
    const out = missing.map((i) => `instance ${i} (a hosts[].instanceId) does not exist or is terminated: set the server's current instance id or remove it`);
    for (const [instanceId, list] of Object.entries(interfaces)) {
        if (!list.some((n) => n.groups.includes(s.groupId))) {
            out.push(`instance ${instanceId} (a hosts[].instanceId) does not carry the adopted group ${s.groupId} on any interface, so hostguard's rules would `
                + `not apply to it: add the group to its interface (\`aws ec2 modify-network-interface-attribute --network-interface-id ${list[0]?.networkInterfaceId ?? "eni-..."} --groups ${s.groupId} ...\`), or remove its instanceId`);
        }
    }
    const refusal = exposure.openGroupsRefusal(open, "Remove those rules, or take the groups off the interfaces "
        + "(`aws ec2 modify-network-interface-attribute --network-interface-id eni-... --groups ...`), then preview again; "
        + `only ${s.groupId}'s rules are changed by hostguard on this path.`);
    return { refusals: refusal ? [...out, refusal] : out, reachable };
}

const sameList = (a: string[] | undefined, b: string[] | undefined) => JSON.stringify([...(a ?? [])].sort()) === JSON.stringify([...(b ?? [])].sort());

/**
 * E after EC2 changed: the engine's initialization failure (the SDK's dynamic
 * provider host sends `id` and `properties` as ErrorResourceInitFailed), so the
 * state keeps PROPS, with what destroy restores.
 */
function keepState(e: unknown, id: string, props: AdoptedGroupState): never {
    if (ec2.wasChanged(e)) {
        throw Object.assign(e as Error, { id, properties: props, reasons: [(e as Error).message] });
    }
    throw e;
}

export const adoptedGroupProvider: pulumi.dynamic.ResourceProvider = {
    async check(olds: AdoptedGroupState, news: AdoptedGroupState) {
        // Unknown until the group exists (never the case for a configured id).
        const failures: pulumi.dynamic.CheckFailure[] = [];
        if (/^sg-/.test(String(news.groupId))) {
            try {
                // The hosts the user removed (this time or before) still carry the group: a warning, not a refusal.
                const former = olds?.groupId === news.groupId ? [...(olds.removedInstances ?? []), ...(olds.stackInstanceIds ?? [])] : [];
                const g = await guard(news, former);
                if (g.refusal) {
                    failures.push({ property: "groupId", reason: g.refusal });
                }
                g.warnings.forEach((w) => console.warn(w));
                news = { ...news, removedInstances: g.removed };
            } catch (e) {
                throw new Error(`listing the network interfaces that carry ${news.groupId} failed (region ${news.region}): ${(e as Error).message}`);
            }
            try {
                const host = await hostRefusals(news);
                failures.push(...host.refusals.map((reason) => ({ property: "stackInstanceIds", reason })));
                // Shown by preview: what each of the stack's instances lets in from anywhere after the up.
                news = { ...news, worldReachable: host.reachable };
            } catch (e) {
                throw new Error(`reading the groups of the stack's instances failed (region ${news.region}): ${(e as Error).message}`);
            }
        }
        return { inputs: news, failures };
    },

    async diff(_id: string, olds: AdoptedGroupState, news: AdoptedGroupState) {
        const replaces = olds.groupId !== news.groupId || olds.region !== news.region ? ["groupId"] : [];
        // Drift is read live, so a plain preview plans it (no --refresh needed).
        const live = replaces.length > 0 ? null : await ec2.findIngress(client(news), news.groupId);
        const drift = !ec2.sameAtoms(live ?? Object.values(olds.actual ?? {}), ec2.wantedAtoms(news.ingress));
        const guardInputs = !sameList(olds.stackInstanceIds, news.stackInstanceIds) || !sameList(olds.sharedInstances, news.sharedInstances)
            || !sameList(olds.removedInstances, news.removedInstances);
        return { changes: replaces.length > 0 || drift || guardInputs || olds.profile !== news.profile, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: AdoptedGroupState) {
        // The original is the record's (checkpointed before this runs): a second create after a killed up finds the group half-changed.
        try {
            const r = await ec2.reconcileIngress(client(inputs), inputs.groupId, ec2.wantedAtoms(inputs.ingress));
            return { id: inputs.groupId, outs: { ...inputs, actual: byKey(r.after) } };
        } catch (e) {
            return keepState(e, inputs.groupId, { ...inputs, actual: {} });
        }
    },

    async read(id: string, props: AdoptedGroupState) {
        const actual = await ec2.findIngress(client(props), props.groupId ?? id);
        if (actual === null) {
            // The group was deleted: nothing is left to reconcile or restore.
            return { id: "", props: {} };
        }
        return { id, props: { ...props, actual: byKey(actual) } };
    },

    async update(id: string, olds: AdoptedGroupState, news: AdoptedGroupState) {
        try {
            const r = await ec2.reconcileIngress(client(news), news.groupId, ec2.wantedAtoms(news.ingress));
            return { outs: { ...news, actual: byKey(r.after) } };
        } catch (e) {
            return keepState(e, id, { ...news, actual: {} });
        }
    },

    async delete(_id: string, props: AdoptedGroupState) {
        await restoreRecorded(props, props.original, false);
    },
};

/**
 * Puts the group's inbound rules back to ORIGINAL and says on the provider's
 * output what could not be put back. QUIET_UNLESS_CHANGED: the record's
 * delete after the enforcing resource's, which already restored and warned:
 * it says something only when it had to change the group itself. A group that
 * is gone is named by the record's delete alone: it runs on every destroy,
 * after the enforcing resource's, so the line is said once.
 */
async function restoreRecorded(s: { region: string; profile?: string; groupId: string }, original: RuleAtom[], quietUnlessChanged: boolean): Promise<void> {
    const r = await ec2.restoreIngress(client(s as AdoptedGroupState), s.groupId, original);
    if (r === null) {
        if (quietUnlessChanged) {
            console.warn(`hostguard: security group ${s.groupId} no longer exists; its recorded inbound rules were not restored`);
        }
        return;
    }
    const changed = r.revoked.length + r.authorized.length + r.described.length > 0;
    if (changed && quietUnlessChanged) {
        console.warn(`hostguard: security group ${s.groupId} was still changed by hostguard (an up stopped before the change was in the state): its recorded inbound rules are back`);
    }
    if (r.skipped.length > 0 && (changed || !quietUnlessChanged)) {
        console.warn(`hostguard: not restored on ${s.groupId} (the group they reference no longer exists): ${r.skipped.map(exposure.ruleText).join(", ")}`);
    }
}

/** The record: the group's inbound rules before hostguard's first change (what destroy restores). */
export interface AdoptedGroupRecordState {
    kind: string;
    region: string;
    profile?: string;
    groupId: string;
    /** Output: the inbound rules as first read (refused when they hold hostguard's: recordRefusal). */
    original?: RuleAtom[];
}

/**
 * Why ORIGINAL cannot be what destroy restores, or "": it holds a rule with
 * one of hostguard's descriptions (whatever its source: another stack's
 * rules, or a group a hostguard stack created), so it is hostguard's change,
 * not the group's own rules.
 */
export function recordRefusal(groupId: string, original: RuleAtom[]): string {
    const marked = ec2.hostguardAtoms(original);
    if (marked.length === 0) {
        return "";
    }
    return `security group ${groupId} already holds hostguard's inbound rules (${marked.map(exposure.ruleText).join(", ")}), so its own rules `
        + "are not known: another hostguard stack adopted or created it, or a stack whose state was lost changed it. destroy would put hostguard's rules "
        + "back as the group's own. If another stack manages it, give this stack's servers a group of their own (or destroy that stack first); "
        + "otherwise set the group's inbound rules back to what they were before hostguard "
        + "(`aws ec2 revoke-security-group-ingress` / `authorize-security-group-ingress`; a rule of yours with one of these descriptions: "
        + "`aws ec2 update-security-group-rule-descriptions-ingress`), then run up again.";
}

/**
 * Reads and records; never changes EC2. Its create is checkpointed before the
 * enforcing resource's create runs (the enforcing resource takes `original`
 * as an input). A refresh keeps the record; a deleted group drops it.
 */
export const adoptedGroupRecordProvider: pulumi.dynamic.ResourceProvider = {
    async diff(_id: string, olds: AdoptedGroupRecordState, news: AdoptedGroupRecordState) {
        const replaces = olds.groupId !== news.groupId || olds.region !== news.region ? ["groupId"] : [];
        return { changes: replaces.length > 0 || olds.profile !== news.profile, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: AdoptedGroupRecordState) {
        const original = await ec2.describeIngress(client(inputs as AdoptedGroupState), inputs.groupId);
        const refusal = recordRefusal(inputs.groupId, original);
        if (refusal) {
            throw new Error(refusal);
        }
        return { id: inputs.groupId, outs: { ...inputs, original } };
    },

    async read(id: string, props: AdoptedGroupRecordState) {
        return (await ec2.findIngress(client(props as AdoptedGroupState), props.groupId ?? id)) === null ? { id: "", props: {} } : { id, props };
    },

    async update(_id: string, olds: AdoptedGroupRecordState, news: AdoptedGroupRecordState) {
        return { outs: { ...news, original: olds.original } };
    },

    /**
     * Reconciles the group to the record. Dependents go first, so after
     * hostguard-ingress's delete the group already reads as recorded and
     * nothing is sent. When that resource is not in the state (an up killed
     * or cancelled while its create was pending: the engine drops a pending
     * create), this is what puts the original rules back.
     */
    async delete(_id: string, props: AdoptedGroupRecordState) {
        if (props.original !== undefined) {
            await restoreRecorded(props, props.original, true);
        }
    },
};

export interface AdoptedGroupRecordArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    groupId: pulumi.Input<string>;
}

export class AdoptedGroupRecord extends pulumi.dynamic.Resource {
    declare public readonly original: pulumi.Output<RuleAtom[]>;

    constructor(name: string, args: AdoptedGroupRecordArgs, opts?: pulumi.CustomResourceOptions) {
        super(adoptedGroupRecordProvider, name, { kind: ADOPTED_GROUP_RECORD_KIND, ...args, original: undefined }, opts);
    }
}

export interface AdoptedGroupIngressArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    groupId: pulumi.Input<string>;
    ingress: WantedRule[];
    stackInstanceIds: string[];
    sharedInstances: string[];
    /** The record's output: what destroy restores. */
    original: pulumi.Input<RuleAtom[]>;
}

export class AdoptedGroupIngress extends pulumi.dynamic.Resource {
    declare public readonly original: pulumi.Output<RuleAtom[]>;
    declare public readonly actual: pulumi.Output<Record<string, RuleAtom>>;

    constructor(name: string, args: AdoptedGroupIngressArgs, opts?: pulumi.CustomResourceOptions) {
        super(adoptedGroupProvider, name, { kind: ADOPTED_GROUP_KIND, ...args, actual: undefined }, opts);
    }
}
