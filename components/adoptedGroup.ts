// Adopting an existing security group (hostguard:securityGroupId): a dynamic
// resource whose provider makes the group's inbound rules exactly hostguard's
// and puts the original ones back on destroy. Preview refuses a group that
// also sits on a server outside the stack, and any other group on any
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
    /** Set by check (shown by preview): per stack instance, what it lets in from anywhere after the change, every group of every interface counted. */
    worldReachable?: Record<string, string[]>;
    /** Output: the group's inbound rules before the first up (what destroy restores). */
    original?: RuleAtom[];
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

/** The guard: "" when no interface outside the stack (and not accepted) carries the group. */
async function guardRefusal(s: AdoptedGroupState): Promise<string> {
    const users = await ec2.interfacesCarrying(client(s), s.groupId);
    return ec2.sharedGroupRefusal(s.groupId, ec2.foreignUsers(users, s.stackInstanceIds ?? [], s.sharedInstances ?? []), SHARED_INSTANCES_KEY);
}

/** The whole-host check: every other group on every interface of the stack's instances; "" when only 443 is open. */
async function hostRefusals(s: AdoptedGroupState): Promise<{ refusals: string[]; reachable: Record<string, string[]> }> {
    const { open, missing, reachable } = await exposure.openGroups(client(s), s.stackInstanceIds ?? [], [s.groupId]);
    const out = missing.map((i) => `instance ${i} (a hosts[].instanceId) does not exist or is terminated: set the server's current instance id or remove it`);
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
    async check(_olds: AdoptedGroupState, news: AdoptedGroupState) {
        // Unknown until the group exists (never the case for a configured id).
        const failures: pulumi.dynamic.CheckFailure[] = [];
        if (/^sg-/.test(String(news.groupId))) {
            try {
                const refusal = await guardRefusal(news);
                if (refusal) {
                    failures.push({ property: "groupId", reason: refusal });
                }
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
        const drift = !ec2.sameAtoms(Object.values(olds.actual ?? {}), ec2.wantedAtoms(news.ingress));
        const guardInputs = !sameList(olds.stackInstanceIds, news.stackInstanceIds) || !sameList(olds.sharedInstances, news.sharedInstances);
        return { changes: replaces.length > 0 || drift || guardInputs || olds.profile !== news.profile, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: AdoptedGroupState) {
        const c = client(inputs);
        // Recorded before any change, so that a failure after the change still leaves it in the state.
        const original = await ec2.describeIngress(c, inputs.groupId);
        try {
            const r = await ec2.reconcileIngress(c, inputs.groupId, ec2.wantedAtoms(inputs.ingress));
            return { id: inputs.groupId, outs: { ...inputs, original: r.before, actual: byKey(r.after) } };
        } catch (e) {
            return keepState(e, inputs.groupId, { ...inputs, original, actual: {} });
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
            return { outs: { ...news, original: olds.original, actual: byKey(r.after) } };
        } catch (e) {
            return keepState(e, id, { ...news, original: olds.original, actual: {} });
        }
    },

    async delete(_id: string, props: AdoptedGroupState) {
        if (props.original === undefined) {
            throw new Error(`no recorded inbound rules of ${props.groupId} in the state: nothing to restore them from; remove the resource with \`pulumi state delete\``);
        }
        const r = await ec2.restoreIngress(client(props), props.groupId, props.original ?? []);
        if (r === null) {
            console.warn(`hostguard: security group ${props.groupId} no longer exists; nothing to restore`);
        } else if (r.skipped.length > 0) {
            console.warn(`hostguard: not restored on ${props.groupId} (the group they reference no longer exists): ${r.skipped.map(exposure.ruleText).join(", ")}`);
        }
    },
};

export interface AdoptedGroupIngressArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    groupId: pulumi.Input<string>;
    ingress: WantedRule[];
    stackInstanceIds: string[];
    sharedInstances: string[];
}

export class AdoptedGroupIngress extends pulumi.dynamic.Resource {
    public readonly original!: pulumi.Output<RuleAtom[]>;
    public readonly actual!: pulumi.Output<Record<string, RuleAtom>>;

    constructor(name: string, args: AdoptedGroupIngressArgs, opts?: pulumi.CustomResourceOptions) {
        super(adoptedGroupProvider, name, { kind: ADOPTED_GROUP_KIND, ...args, original: undefined, actual: undefined }, opts);
    }
}
