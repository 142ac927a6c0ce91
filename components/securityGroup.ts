// The server's security group. Created: one aws.ec2.SecurityGroup with inline
// ingress/egress (never mixed with standalone rule resources, which would fight
// over the same rules), and for each hosts[].instanceId the instance's primary
// interfaces (every one) set to exactly that group plus the kept ones
// (interfaceGroups.ts).
// Adopted (securityGroupId): no @pulumi/aws resource at all; the group's inbound
// rules are reconciled to hostguard's and restored on destroy (adoptedGroup.ts).
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { AdoptedGroupIngress, AdoptedGroupRecord } from "./adoptedGroup";
import { DEFAULT_SECURITY_GROUP_DESCRIPTION } from "./config";
import { InterfaceGroups, InterfaceRecord } from "./interfaceGroups";
import { HOSTGUARD_RULE_DESCRIPTIONS, HOSTGUARD_TAG, type WantedRule } from "./ec2Reconcile";

export interface SecurityGroupArgs {
    /** Region of the EC2 calls the dynamic resources make (aws:region or AWS_REGION). */
    region?: string;
    /** aws:profile: the shared-config profile the dynamic resources' EC2 calls use (its role_arn, SSO, ... included). */
    profile?: string;
    vpcId: string;
    /** Port 8080 is reachable from these only. */
    privateCidrs: string[];
    /** SSH (deployment) from these; never 0.0.0.0/0 or ::/0 (the validator refuses them). */
    adminCidrs: string[];
    /** SSH also from this group (the bastion's). */
    bastionSecurityGroupId?: string;
    /** Adopt this existing group instead of creating one: its inbound rules become hostguard's. */
    adoptId?: string;
    /** Name and description of a created group (ignored when adopting). */
    name?: string;
    description?: string;
    /**
     * The stack's instances, by host name. A created group becomes the whole group
     * set of each one's interfaces, every one (with keepGroupIds); an adopted group may
     * sit on them (the shared-group guard refuses any other instance).
     */
    attachTo?: Array<{ name: string; instanceId: string }>;
    /** Groups kept on the interfaces beside a created group. */
    keepGroupIds?: string[];
    /** Instances or interfaces outside the stack accepted to carry an adopted group. */
    sharedInstances?: string[];
}

/** One inbound rule: the shape the group, the adopted group's reconcile and the outputs share. */
export type IngressRule = WantedRule;

const v4 = (cidrs: string[]) => cidrs.filter((c) => !c.includes(":"));
const v6 = (cidrs: string[]) => cidrs.filter((c) => c.includes(":"));

/** The inbound rules, as data: the component, the outputs and the tests use the same list. */
export function ingressRules(args: Pick<SecurityGroupArgs, "privateCidrs" | "adminCidrs" | "bastionSecurityGroupId">): IngressRule[] {
    const rule = (description: string, port: number, cidrs: string[], groups: string[] = []): IngressRule => ({
        description, protocol: "tcp", fromPort: port, toPort: port,
        cidrBlocks: v4(cidrs), ipv6CidrBlocks: v6(cidrs), securityGroups: groups,
    });
    // The descriptions are hostguard's mark: a group recorded as an original must hold none of them (adoptedGroup.ts).
    const [https, app, sshAdmin, sshBastion] = HOSTGUARD_RULE_DESCRIPTIONS;
    const rules = [
        rule(https, 443, ["0.0.0.0/0", "::/0"]),
        rule(app, 8080, args.privateCidrs),
    ];
    const bastion = args.bastionSecurityGroupId ? [args.bastionSecurityGroupId] : [];
    if (args.adminCidrs.length > 0 || bastion.length > 0) {
        rules.push(rule(bastion.length > 0 ? sshBastion : sshAdmin, 22, args.adminCidrs, bastion));
    }
    return rules;
}

export class SecurityGroup extends pulumi.ComponentResource {
    public readonly groupId: pulumi.Output<string>;
    public readonly ingress: IngressRule[];
    /** Ids of the interface-groups resources (created group with instanceIds only). */
    public readonly interfaceIds: pulumi.Output<string>[];

    constructor(name: string, args: SecurityGroupArgs, opts?: pulumi.ComponentResourceOptions) {
        super("hostguard:aws:SecurityGroup", name, {}, opts);
        this.ingress = ingressRules(args);
        const hosts = args.attachTo ?? [];
        const region = (): string => {
            if (!args.region) {
                throw new Error("the AWS region is not set: set aws:region (`pulumi config set aws:region eu-west-1`) or AWS_REGION");
            }
            return args.region;
        };
        if (args.adoptId !== undefined) {
            // Nothing of @pulumi/aws here: the group exists, and only its inbound
            // rules change (recorded first, restored on destroy). Egress stays as it is.
            const where = { region: region(), ...(args.profile ? { profile: args.profile } : {}), groupId: args.adoptId };
            const record = new AdoptedGroupRecord(`${name}-ingress-record`, where, { parent: this });
            const adopted = new AdoptedGroupIngress(`${name}-ingress`, {
                ...where, ingress: this.ingress, stackInstanceIds: hosts.map((h) => h.instanceId), sharedInstances: args.sharedInstances ?? [], original: record.original,
            }, { parent: this });
            this.groupId = adopted.id;
            this.interfaceIds = [];
        } else {
            const group = new aws.ec2.SecurityGroup(`${name}-sg`, {
                vpcId: args.vpcId,
                name: args.name,
                description: args.description ?? DEFAULT_SECURITY_GROUP_DESCRIPTION,
                ingress: this.ingress.map((r) => ({
                    description: r.description, protocol: r.protocol, fromPort: r.fromPort, toPort: r.toPort,
                    cidrBlocks: r.cidrBlocks, ipv6CidrBlocks: r.ipv6CidrBlocks, securityGroups: r.securityGroups,
                })),
                // Open egress: the webhook, package mirrors and the chat service need it.
                egress: [{ description: "all outbound", protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"], ipv6CidrBlocks: ["::/0"] }],
                // The mark every stack's record refuses on an interface (interfaceGroups.ts); the IAM policy scopes changes to it.
                tags: { [HOSTGUARD_TAG.key]: HOSTGUARD_TAG.value },
                // A named group's replacement (a new description) would clash with the old name: the old one goes first.
            }, { parent: this, ...(args.name ? { deleteBeforeReplace: true } : {}) });
            this.groupId = group.id;
            // The interface's WHOLE set, not one more group: EC2 unions the rules of
            // every group on it, so an allow-all group left there keeps the server open.
            // Each instance's interfaces are recorded by a resource of their own first (checkpointed before any change).
            this.interfaceIds = hosts.map((h) => {
                const where = { region: region(), ...(args.profile ? { profile: args.profile } : {}), instanceId: h.instanceId };
                const record = new InterfaceRecord(`${h.name}-interface-record`, { ...where, hostguardGroupId: group.id }, { parent: this });
                return new InterfaceGroups(`${h.name}-interface-groups`, {
                    ...where, vpcId: args.vpcId, groups: [group.id, ...(args.keepGroupIds ?? [])], ingress: this.ingress, originals: record.originals,
                }, { parent: this }).id;
            });
        }
        this.registerOutputs({ groupId: this.groupId, ingress: this.ingress });
    }
}
