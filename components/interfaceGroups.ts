// The create path (hosts[].instanceId): a dynamic resource whose provider sets
// the instance's primary network interface to exactly hostguard's group plus
// the groups the user keeps (hostguard:keepSecurityGroupIds), recording the
// set it had and putting that back on destroy. Adding a group would not do:
// EC2 unions the rules of every group on an interface, so an allow-all group
// left beside hostguard's would keep the server open. The EC2 work is in
// ec2Reconcile.ts; this file only maps Pulumi's lifecycle onto it.
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "./ec2Reconcile";

/** Marks hostguard's dynamic resource among all `pulumi-nodejs:dynamic:Resource`s. */
export const INTERFACE_GROUPS_KIND = "hostguard:interface-groups";

export interface InterfaceGroupsState {
    kind: string;
    region: string;
    instanceId: string;
    /** The whole set the interface must carry: hostguard's group first, then the kept ones. */
    groups: string[];
    /** Outputs: the primary interface, its groups before the first up (restored on destroy), and as last read. */
    networkInterfaceId?: string;
    originalGroups?: string[];
    actualGroups?: string[];
}

export const interfaceGroupsProvider: pulumi.dynamic.ResourceProvider = {
    async diff(_id: string, olds: InterfaceGroupsState, news: InterfaceGroupsState) {
        const replaces = olds.instanceId !== news.instanceId || olds.region !== news.region ? ["instanceId"] : [];
        const changes = replaces.length > 0 || !ec2.sameGroups(olds.actualGroups ?? [], news.groups);
        return { changes, replaces, deleteBeforeReplace: true };
    },

    async create(inputs: InterfaceGroupsState) {
        const client = ec2.ec2Client(inputs.region);
        const primary = await ec2.primaryInterface(client, inputs.instanceId);
        const actualGroups = await ec2.setInterfaceGroups(client, primary.networkInterfaceId, inputs.groups);
        return {
            id: `${inputs.instanceId}/${primary.networkInterfaceId}`,
            outs: { ...inputs, networkInterfaceId: primary.networkInterfaceId, originalGroups: primary.groups, actualGroups },
        };
    },

    async read(id: string, props: InterfaceGroupsState) {
        const actualGroups = await ec2.interfaceGroups(ec2.ec2Client(props.region), props.networkInterfaceId!);
        return { id, props: { ...props, actualGroups } };
    },

    async update(_id: string, olds: InterfaceGroupsState, news: InterfaceGroupsState) {
        const actualGroups = await ec2.setInterfaceGroups(ec2.ec2Client(news.region), olds.networkInterfaceId!, news.groups);
        return { outs: { ...news, networkInterfaceId: olds.networkInterfaceId, originalGroups: olds.originalGroups, actualGroups } };
    },

    async delete(_id: string, props: InterfaceGroupsState) {
        if (!props.networkInterfaceId || !props.originalGroups) {
            throw new Error(`no recorded groups of ${props.instanceId}'s interface in the state: nothing to restore them from`);
        }
        await ec2.setInterfaceGroups(ec2.ec2Client(props.region), props.networkInterfaceId, props.originalGroups);
    },
};

export interface InterfaceGroupsArgs {
    region: pulumi.Input<string>;
    instanceId: pulumi.Input<string>;
    groups: pulumi.Input<pulumi.Input<string>[]>;
}

export class InterfaceGroups extends pulumi.dynamic.Resource {
    public readonly networkInterfaceId!: pulumi.Output<string>;
    public readonly originalGroups!: pulumi.Output<string[]>;
    public readonly actualGroups!: pulumi.Output<string[]>;

    constructor(name: string, args: InterfaceGroupsArgs, opts?: pulumi.CustomResourceOptions) {
        super(interfaceGroupsProvider, name, {
            kind: INTERFACE_GROUPS_KIND, ...args, networkInterfaceId: undefined, originalGroups: undefined, actualGroups: undefined,
        }, opts);
    }
}
