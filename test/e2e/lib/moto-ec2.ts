// The e2e scenario's hands and eyes on moto (scenario 13 of test/e2e/run.sh):
// it makes the account the stack adopts a group from, adds a rule by hand, and
// prints a group's rules; the stack itself reaches moto only through its
// dynamic resources. Endpoint and dummy credentials come from the caller's
// environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ..., AWS_REGION).
//
//   setup                   VPC, subnet, a group with allow-all v4+v6, 80 and SSH from anywhere,
//                           an instance outside the stack carrying it, and the stack's host: an
//                           instance with the group and an allow-all "launch-wizard" group on its
//                           primary interface and a port-80 group on a secondary one with an
//                           Elastic IP: prints "VPC GROUP OTHER HOST WIZARD WEB80 ENI2"
//   setup-killed            for scenario 18 (lib/ec2-killed.sh): VPC, a group with
//                           lib/fixtures.ts's messy rules on two instances of their own (adopt path),
//                           a group tagged as hostguard's (the created group's stand-in) and an
//                           instance with an allow-all group on its primary interface and
//                           [allow-all, web] on a secondary one (create path): prints
//                           "VPC GROUP ADOPT_HOST ADOPT_HOST2 HOSTGUARD CREATE_HOST ENI1 ENI2"
//   groups ENI              the interface's groups, sorted, on one line
//   setup-one               VPC, subnet, one instance whose only group (allow-all, 80 and SSH from
//                           anywhere) is its own, as a server launched from the console has:
//                           prints "VPC GROUP HOST" (the README's Quick start, scenario 17)
//   close-host HOST GROUP   every interface of HOST carries GROUP only (the user's fix)
//   terminate INSTANCE      terminates it
//   fault-proxy TARGET AFTER FAIL
//                           a proxy in front of TARGET answering every FAIL action with
//                           RequestLimitExceeded once an AFTER action went through; prints its
//                           endpoint, runs until killed
//   fault-proxy TARGET hold the first change is forwarded and never answered; prints
//                           "held ACTION" once it reached EC2
//   snapshot GROUP          the whole group (name, description, inbound, outbound) as JSON lines
//   ingress GROUP           its inbound rules, one line per source, sorted
//   wanted ADMIN_CIDR...    hostguard's inbound rules in the same form (default private networks)
//   wanted-for PRIVATE ADMIN...  the same for one private network PRIVATE
//   add-rule GROUP          a rule added by hand: tcp 3306 from 0.0.0.0/0, "added by hand"
import {
    AuthorizeSecurityGroupIngressCommand, CreateTagsCommand, DescribeInstancesCommand, EC2Client, ModifyNetworkInterfaceAttributeCommand, TerminateInstancesCommand,
} from "@aws-sdk/client-ec2";
import { startFaultProxy } from "../../aws/faultProxy";
import { DEFAULT_PRIVATE_CIDRS } from "../../../components/config";
import { ingressRules } from "../../../components/securityGroup";
import { Account, messyIngress, wantedLines } from "../../aws/fixtures";

async function main(argv: string[]): Promise<void> {
    const client = new EC2Client({});
    const [cmd, ...args] = argv;
    switch (cmd) {
        case "setup": {
            const account = await Account.create(client);
            const groupId = await account.group([
                { IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "allow all" }], Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "allow all v6" }] },
                { IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "0.0.0.0/0" }], Ipv6Ranges: [{ CidrIpv6: "::/0" }] },
                { IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "SSH from anywhere" }] },
            ], "launch-wizard-1");
            const other = await account.instance([groupId]);
            const wizard = await account.group([{ IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "wizard allow all" }] }], "launch-wizard-2");
            const web80 = await account.group([{ IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "http" }] }], "web80");
            const host = await account.instance([groupId, wizard]);
            const eni2 = await account.secondaryInterface(host.instanceId, [web80]);
            console.log(`${account.vpcId} ${groupId} ${other.instanceId} ${host.instanceId} ${wizard} ${web80} ${eni2}`);
            return;
        }
        case "setup-killed": {
            const account = await Account.create(client);
            const groupId = await account.group(messyIngress(await account.group([], "referenced"), await account.prefixList()), "adopted");
            const adoptHost = await account.instance([groupId]);
            const adoptHost2 = await account.instance([groupId]);
            const hostguard = await account.group([], "hostguard");
            await client.send(new CreateTagsCommand({ Resources: [hostguard], Tags: [{ Key: "managed-by", Value: "hostguard" }] }));
            const allowAll = await account.group([{ IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "allow all" }] }], "launch-wizard-1");
            const web = await account.group([{ IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "http" }] }], "web");
            const host = await account.instance([allowAll]);
            const eni2 = await account.secondaryInterface(host.instanceId, [allowAll, web]);
            console.log(`${account.vpcId} ${groupId} ${adoptHost.instanceId} ${adoptHost2.instanceId} ${hostguard} ${host.instanceId} ${host.networkInterfaceId} ${eni2}`);
            return;
        }
        case "groups":
            console.log((await new Account(client, "", "", "").groupsOn(args[0])).join(" "));
            return;
        case "setup-one": {
            const account = await Account.create(client);
            const groupId = await account.group([
                { IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "allow all" }] },
                { IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "0.0.0.0/0" }] },
                { IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "SSH from anywhere" }] },
            ], "launch-wizard-1");
            const host = await account.instance([groupId]);
            console.log(`${account.vpcId} ${groupId} ${host.instanceId}`);
            return;
        }
        case "close-host": {
            const out = await client.send(new DescribeInstancesCommand({ InstanceIds: [args[0]] }));
            for (const n of out.Reservations![0].Instances![0].NetworkInterfaces ?? []) {
                await client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: n.NetworkInterfaceId!, Groups: [args[1]] }));
            }
            return;
        }
        case "terminate":
            await client.send(new TerminateInstancesCommand({ InstanceIds: [args[0]] }));
            return;
        case "fault-proxy": {
            const [target, afterAction, failAction] = args;
            const proxy = await startFaultProxy(target);
            let armed = false;
            proxy.rule = afterAction === "hold"
                // The first change is forwarded (EC2 applies it) and never answered; the caller is then killed.
                ? (action) => {
                    if (armed || !/^(Authorize|Revoke|UpdateSecurityGroupRule|ModifyNetworkInterface)/.test(action)) {
                        return false;
                    }
                    armed = true;
                    setTimeout(() => console.log(`held ${action}`), 200);
                    return "hold";
                }
                : (action) => {
                    armed ||= action === afterAction;
                    return armed && action === failAction;
                };
            console.log(proxy.endpoint);
            await new Promise(() => {});
            return;
        }
        case "snapshot": {
            const s = await new Account(client, "", "", "").snapshot(args[0]);
            console.log([`name ${s.name}`, `description ${s.description}`, ...s.ingress.map((l) => `in ${l}`), ...s.egress.map((l) => `out ${l}`)].join("\n"));
            return;
        }
        case "ingress":
            console.log((await new Account(client, "", "", "").ingress(args[0])).join("\n"));
            return;
        case "wanted":
            console.log(wantedLines(ingressRules({ privateCidrs: [...DEFAULT_PRIVATE_CIDRS], adminCidrs: args })).join("\n"));
            return;
        case "wanted-for":
            console.log(wantedLines(ingressRules({ privateCidrs: [args[0]], adminCidrs: args.slice(1) })).join("\n"));
            return;
        case "add-rule":
            await client.send(new AuthorizeSecurityGroupIngressCommand({
                GroupId: args[0], IpPermissions: [{ IpProtocol: "tcp", FromPort: 3306, ToPort: 3306, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "added by hand" }] }],
            }));
            return;
        default:
            throw new Error(`usage: moto-ec2.ts setup | setup-one | setup-killed | groups ENI | snapshot GROUP | ingress GROUP | wanted ADMIN_CIDR... | wanted-for PRIVATE ADMIN... | add-rule GROUP | close-host HOST GROUP | terminate INSTANCE | fault-proxy TARGET AFTER FAIL (got ${cmd})`);
    }
}

main(process.argv.slice(2)).catch((e) => {
    console.error(`moto-ec2: ${(e as Error).message}`);
    process.exit(1);
});
