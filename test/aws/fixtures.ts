// Set-up and independent checks for the EC2 tests: a VPC with groups,
// prefix lists and instances in moto, and a reading of a group's rules that
// does not use the code under test (one line per source, sorted).
import {
    AllocateAddressCommand, AssociateAddressCommand, AttachNetworkInterfaceCommand, AuthorizeSecurityGroupIngressCommand,
    CreateManagedPrefixListCommand, CreateNetworkInterfaceCommand, CreateSecurityGroupCommand, CreateSubnetCommand,
    CreateVpcCommand, DeleteNetworkInterfaceCommand, DescribeImagesCommand, DetachNetworkInterfaceCommand, DescribeNetworkInterfacesCommand, DescribeSecurityGroupsCommand, EC2Client,
    ModifyNetworkInterfaceAttributeCommand, RunInstancesCommand, TerminateInstancesCommand, type IpPermission,
} from "@aws-sdk/client-ec2";
import type { WantedRule } from "../../components/ec2Reconcile";

/** An inbound rule that lets everything in from anywhere (a wizard's default group). */
export const ALLOW_ALL: IpPermission[] = [{ IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "allow all" }] }];

export class Account {
    private n = 0;
    constructor(readonly client: EC2Client, readonly vpcId: string, readonly subnetId: string, readonly imageId: string) {}

    static async create(client: EC2Client): Promise<Account> {
        const vpc = await client.send(new CreateVpcCommand({ CidrBlock: "10.0.0.0/16" }));
        const subnet = await client.send(new CreateSubnetCommand({ VpcId: vpc.Vpc!.VpcId!, CidrBlock: "10.0.1.0/24" }));
        const images = await client.send(new DescribeImagesCommand({}));
        return new Account(client, vpc.Vpc!.VpcId!, subnet.Subnet!.SubnetId!, images.Images![0].ImageId!);
    }

    async group(ingress: IpPermission[] = [], label = "g"): Promise<string> {
        this.n += 1;
        const g = await this.client.send(new CreateSecurityGroupCommand({
            GroupName: `${label}-${this.n}-${Date.now()}`, Description: `test group ${label}`, VpcId: this.vpcId,
        }));
        if (ingress.length > 0) {
            await this.client.send(new AuthorizeSecurityGroupIngressCommand({ GroupId: g.GroupId!, IpPermissions: ingress }));
        }
        return g.GroupId!;
    }

    async prefixList(): Promise<string> {
        this.n += 1;
        const p = await this.client.send(new CreateManagedPrefixListCommand({
            PrefixListName: `pl-${this.n}`, MaxEntries: 5, AddressFamily: "IPv4", Entries: [{ Cidr: "198.51.100.0/24" }],
        }));
        return p.PrefixList!.PrefixListId!;
    }

    /**
     * An instance launched with the subnet only (moto would otherwise keep
     * launch groups apart from the interface's), then GROUPS set on its
     * primary interface. Returns the instance and that interface.
     */
    async instance(groups: string[]): Promise<{ instanceId: string; networkInterfaceId: string }> {
        const r = await this.client.send(new RunInstancesCommand({ ImageId: this.imageId, MinCount: 1, MaxCount: 1, SubnetId: this.subnetId }));
        const instanceId = r.Instances![0].InstanceId!;
        const enis = await this.client.send(new DescribeNetworkInterfacesCommand({ Filters: [{ Name: "attachment.instance-id", Values: [instanceId] }] }));
        const networkInterfaceId = enis.NetworkInterfaces![0].NetworkInterfaceId!;
        await this.client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: networkInterfaceId, Groups: groups }));
        return { instanceId, networkInterfaceId };
    }

    /**
     * A second interface with GROUPS attached to INSTANCE_ID at DEVICE_INDEX, with an
     * Elastic IP associated (a public address of its own). Returns its id.
     */
    async secondaryInterface(instanceId: string, groups: string[], deviceIndex = 1): Promise<string> {
        const eni = await this.client.send(new CreateNetworkInterfaceCommand({ SubnetId: this.subnetId, Groups: groups, Description: "secondary" }));
        const id = eni.NetworkInterface!.NetworkInterfaceId!;
        await this.client.send(new AttachNetworkInterfaceCommand({ NetworkInterfaceId: id, InstanceId: instanceId, DeviceIndex: deviceIndex }));
        const eip = await this.client.send(new AllocateAddressCommand({ Domain: "vpc" }));
        await this.client.send(new AssociateAddressCommand({ AllocationId: eip.AllocationId, NetworkInterfaceId: id }));
        return id;
    }

    /**
     * Terminates the instance as EC2 does: its launch interface (device 0,
     * DeleteOnTermination true) is deleted, an interface attached later
     * (DeleteOnTermination false) is detached and survives. moto differs: it
     * keeps both attached to the terminated instance, so this does the rest.
     */
    async terminate(instanceId: string): Promise<void> {
        const enis = await this.client.send(new DescribeNetworkInterfacesCommand({ Filters: [{ Name: "attachment.instance-id", Values: [instanceId] }] }));
        await this.client.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
        for (const n of enis.NetworkInterfaces ?? []) {
            if (n.Attachment!.DeviceIndex === 0) {
                await this.client.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: n.NetworkInterfaceId! }));
            } else {
                await this.client.send(new DetachNetworkInterfaceCommand({ AttachmentId: n.Attachment!.AttachmentId!, Force: true }));
            }
        }
    }

    /** Moves the interface from its instance to TO_INSTANCE (a floating interface). */
    async move(networkInterfaceId: string, toInstance: string, deviceIndex = 1): Promise<void> {
        const out = await this.client.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [networkInterfaceId] }));
        await this.client.send(new DetachNetworkInterfaceCommand({ AttachmentId: out.NetworkInterfaces![0].Attachment!.AttachmentId! }));
        await this.client.send(new AttachNetworkInterfaceCommand({ NetworkInterfaceId: networkInterfaceId, InstanceId: toInstance, DeviceIndex: deviceIndex }));
    }

    /** The interface's groups, sorted, read with DescribeNetworkInterfaces. */
    async groupsOn(networkInterfaceId: string): Promise<string[]> {
        const out = await this.client.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [networkInterfaceId] }));
        return (out.NetworkInterfaces![0].Groups ?? []).map((g) => g.GroupId!).sort();
    }

    /** The whole group as DescribeSecurityGroups shows it, one sorted line per source, inbound and outbound. */
    async snapshot(groupId: string): Promise<{ name: string; description: string; ingress: string[]; egress: string[] }> {
        const out = await this.client.send(new DescribeSecurityGroupsCommand({ GroupIds: [groupId] }));
        const g = out.SecurityGroups![0];
        return { name: g.GroupName!, description: g.Description!, ingress: lines(g.IpPermissions), egress: lines(g.IpPermissionsEgress) };
    }

    async ingress(groupId: string): Promise<string[]> {
        return (await this.snapshot(groupId)).ingress;
    }
}

/** One line per permission and source: `proto from-to source [user] "description"`. */
export function lines(perms: IpPermission[] | undefined): string[] {
    const out: string[] = [];
    for (const p of perms ?? []) {
        const ports = p.IpProtocol === "-1" ? "all" : `${p.FromPort}-${p.ToPort}`;
        const head = `${p.IpProtocol} ${ports}`;
        for (const r of p.IpRanges ?? []) out.push(`${head} ${r.CidrIp} "${r.Description ?? ""}"`);
        for (const r of p.Ipv6Ranges ?? []) out.push(`${head} ${r.CidrIpv6} "${r.Description ?? ""}"`);
        for (const r of p.UserIdGroupPairs ?? []) out.push(`${head} ${r.GroupId} ${r.UserId ?? ""} "${r.Description ?? ""}"`);
        for (const r of p.PrefixListIds ?? []) out.push(`${head} ${r.PrefixListId} "${r.Description ?? ""}"`);
    }
    return out.sort();
}

/** The same lines for hostguard's wanted rules (what the group must show after an up). */
export function wantedLines(rules: WantedRule[]): string[] {
    return rules.flatMap((r) => [...r.cidrBlocks, ...r.ipv6CidrBlocks, ...r.securityGroups].map((s) => (s.startsWith("sg-")
        ? `${r.protocol} ${r.fromPort}-${r.toPort} ${s} 123456789012 "${r.description}"`
        : `${r.protocol} ${r.fromPort}-${r.toPort} ${s} "${r.description}"`))).sort();
}

/** The group every issue-15 case starts from: everything the SPEC says must go, and more. */
export function messyIngress(otherGroupId: string, prefixListId: string): IpPermission[] {
    return [
        { IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "allow all v4" }], Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "allow all v6" }] },
        { IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "0.0.0.0/0" }], Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "ssh v6" }] },
        { IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "http" }] },
        { IpProtocol: "tcp", FromPort: 5432, ToPort: 5432, UserIdGroupPairs: [{ GroupId: otherGroupId, Description: "db clients" }] },
        { IpProtocol: "tcp", FromPort: 9000, ToPort: 9100, PrefixListIds: [{ PrefixListId: prefixListId, Description: "corp prefix list" }] },
        { IpProtocol: "udp", FromPort: 53, ToPort: 53, IpRanges: [{ CidrIp: "10.0.0.0/8", Description: "dns" }] },
        { IpProtocol: "icmp", FromPort: 8, ToPort: -1, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "ping" }] },
        { IpProtocol: "icmpv6", FromPort: -1, ToPort: -1, Ipv6Ranges: [{ CidrIpv6: "::/0" }] },
    ];
}
