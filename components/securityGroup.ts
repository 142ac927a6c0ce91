// The server's security group, with Pulumi authoritative over its rules: inline
// ingress/egress on one aws.ec2.SecurityGroup (never mixed with standalone rule
// resources, which would fight over the same rules). An `up` replaces whatever
// inbound rules the group had, so an old allow-all rule is gone afterwards.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { DEFAULT_SECURITY_GROUP_DESCRIPTION } from "./config";

export interface SecurityGroupArgs {
    vpcId: string;
    /** Port 8080 is reachable from these only. */
    privateCidrs: string[];
    /** SSH (deployment) from these; never 0.0.0.0/0 or ::/0 (the validator refuses them). */
    adminCidrs: string[];
    /** SSH also from this group (the bastion's). */
    bastionSecurityGroupId?: string;
    /** Adopt this existing group instead of creating one (name and description must be its own). */
    adoptId?: string;
    name?: string;
    description?: string;
    /**
     * Instances that get a created group on their primary network interface, one
     * attachment per host (named after it). Ignored when adopting: an adopted group
     * is already on its instance.
     */
    attachTo?: Array<{ name: string; instanceId: string }>;
}

export interface IngressRule {
    description: string;
    protocol: "tcp";
    fromPort: number;
    toPort: number;
    cidrBlocks: string[];
    ipv6CidrBlocks: string[];
    securityGroups: string[];
}

const v4 = (cidrs: string[]) => cidrs.filter((c) => !c.includes(":"));
const v6 = (cidrs: string[]) => cidrs.filter((c) => c.includes(":"));

/** The inbound rules, as data: the component, the outputs and the tests use the same list. */
export function ingressRules(args: Pick<SecurityGroupArgs, "privateCidrs" | "adminCidrs" | "bastionSecurityGroupId">): IngressRule[] {
    const rule = (description: string, port: number, cidrs: string[], groups: string[] = []): IngressRule => ({
        description, protocol: "tcp", fromPort: port, toPort: port,
        cidrBlocks: v4(cidrs), ipv6CidrBlocks: v6(cidrs), securityGroups: groups,
    });
    const rules = [
        rule("HTTPS from anywhere", 443, ["0.0.0.0/0", "::/0"]),
        rule("application port from the private network", 8080, args.privateCidrs),
    ];
    const bastion = args.bastionSecurityGroupId ? [args.bastionSecurityGroupId] : [];
    if (args.adminCidrs.length > 0 || bastion.length > 0) {
        rules.push(rule(bastion.length > 0 ? "SSH for deployment via the bastion" : "SSH for deployment from admin networks", 22, args.adminCidrs, bastion));
    }
    return rules;
}

export class SecurityGroup extends pulumi.ComponentResource {
    public readonly groupId: pulumi.Output<string>;
    public readonly ingress: IngressRule[];
    public readonly attachmentIds: pulumi.Output<string>[];

    constructor(name: string, args: SecurityGroupArgs, opts?: pulumi.ComponentResourceOptions) {
        super("hostguard:aws:SecurityGroup", name, {}, opts);
        this.ingress = ingressRules(args);
        const adopting = args.adoptId !== undefined;
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
            tags: adopting ? undefined : { "managed-by": "hostguard" },
        }, {
            parent: this,
            // An adopted group is attached to a server we did not create: import it
            // on the first `up`, keep its tags, and leave it in place on destroy.
            ...(adopting ? { import: args.adoptId, retainOnDelete: true, ignoreChanges: ["tags"] } : {}),
        });
        this.groupId = group.id;
        // The attachment ADDS the group to the interface: groups already on it (say an
        // allow-all default group) stay, and AWS unions their rules. So this hardens a
        // host only once those are gone; the README says to adopt the instance's own
        // group instead (recommended) or remove the others.
        const attachments = adopting ? [] : (args.attachTo ?? []).map((t) => {
            const instance = aws.ec2.getInstanceOutput({ instanceId: t.instanceId }, { parent: this });
            return new aws.ec2.NetworkInterfaceSecurityGroupAttachment(`${t.name}-sg-attachment`, {
                networkInterfaceId: instance.networkInterfaceId,
                securityGroupId: group.id,
            }, { parent: this });
        });
        this.attachmentIds = attachments.map((a) => a.id);
        this.registerOutputs({ groupId: this.groupId, ingress: this.ingress });
    }
}
