// Adopting an existing security group (hostguard:securityGroupId): a dynamic
// resource whose provider makes the group's inbound rules exactly hostguard's
// and puts the original ones back on destroy. Preview refuses a group that
// also sits on a server outside the stack. The EC2 work is in ec2Reconcile.ts;
// this file only maps Pulumi's create/read/diff/update/delete onto it.
// Egress is left as the group has it.
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "./ec2Reconcile";
import type { RuleAtom, WantedRule } from "./ec2Reconcile";

/** Marks hostguard's dynamic resource among all `pulumi-nodejs:dynamic:Resource`s (the policy pack reads it). */
export const ADOPTED_GROUP_KIND = "hostguard:adopted-group-ingress";
/** The opt-in: instances (or interfaces) outside the stack that may carry the adopted group. */
export const SHARED_INSTANCES_KEY = "hostguard:sharedSecurityGroupInstances";

export interface AdoptedGroupState {
    kind: string;
    region: string;
    groupId: string;
    /** hostguard's inbound rules: what the group must have. */
    ingress: WantedRule[];
    /** The stack's hosts[].instanceId: they may carry the group. */
    stackInstanceIds: string[];
    /** hostguard:sharedSecurityGroupInstances. */
    sharedInstances: string[];
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

/** The guard: "" when no interface outside the stack (and not accepted) carries the group. */
async function guardRefusal(s: AdoptedGroupState): Promise<string> {
    const users = await ec2.interfacesCarrying(ec2.ec2Client(s.region), s.groupId);
    return ec2.sharedGroupRefusal(s.groupId, ec2.foreignUsers(users, s.stackInstanceIds ?? [], s.sharedInstances ?? []), SHARED_INSTANCES_KEY);
}

const sameList = (a: string[] | undefined, b: string[] | undefined) => JSON.stringify([...(a ?? [])].sort()) === JSON.stringify([...(b ?? [])].sort());

export const adoptedGroupProvider: pulumi.dynamic.ResourceProvider = {
    async check(_olds: AdoptedGroupState, news: AdoptedGroupState) {
        // Unknown until the group exists (never the case for a configured id).
        let refusal = "";
        if (/^sg-/.test(String(news.groupId))) {
            try {
                refusal = await guardRefusal(news);
            } catch (e) {
                throw new Error(`listing the network interfaces that carry ${news.groupId} failed (region ${news.region}): ${(e as Error).message}`);
            }
        }
        return { inputs: news, failures: refusal ? [{ property: "groupId", reason: refusal }] : [] };
    },

    async diff(_id: string, olds: AdoptedGroupState, news: AdoptedGroupState) {
        const replaces = olds.groupId !== news.groupId || olds.region !== news.region ? ["groupId"] : [];
        const drift = !ec2.sameAtoms(Object.values(olds.actual ?? {}), ec2.wantedAtoms(news.ingress));
        const guardInputs = !sameList(olds.stackInstanceIds, news.stackInstanceIds) || !sameList(olds.sharedInstances, news.sharedInstances);
        return { changes: replaces.length > 0 || drift || guardInputs, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: AdoptedGroupState) {
        const r = await ec2.reconcileIngress(ec2.ec2Client(inputs.region), inputs.groupId, ec2.wantedAtoms(inputs.ingress));
        return { id: inputs.groupId, outs: { ...inputs, original: r.before, actual: byKey(r.after) } };
    },

    async read(id: string, props: AdoptedGroupState) {
        const actual = await ec2.describeIngress(ec2.ec2Client(props.region), props.groupId ?? id);
        return { id, props: { ...props, actual: byKey(actual) } };
    },

    async update(_id: string, olds: AdoptedGroupState, news: AdoptedGroupState) {
        const r = await ec2.reconcileIngress(ec2.ec2Client(news.region), news.groupId, ec2.wantedAtoms(news.ingress));
        return { outs: { ...news, original: olds.original, actual: byKey(r.after) } };
    },

    async delete(_id: string, props: AdoptedGroupState) {
        if (props.original === undefined) {
            throw new Error(`no recorded inbound rules of ${props.groupId} in the state: nothing to restore them from; remove the resource with \`pulumi state delete\``);
        }
        await ec2.restoreIngress(ec2.ec2Client(props.region), props.groupId, props.original ?? []);
    },
};

export interface AdoptedGroupIngressArgs {
    region: pulumi.Input<string>;
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
