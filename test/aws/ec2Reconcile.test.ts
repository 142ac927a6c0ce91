// The reconcile functions of components/ec2Reconcile.ts against moto's EC2
// API (issue 15): what a group and an interface really end up with, checked
// with DescribeSecurityGroups / DescribeNetworkInterfaces read here, not with
// the code under test.
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { AuthorizeSecurityGroupIngressCommand, CreateNetworkInterfaceCommand, type IpPermission } from "@aws-sdk/client-ec2";
import {
    atomsOf, ec2Client, foreignUsers, permissionsOf, interfacesCarrying, instanceInterfaces, reconcileIngress, restoreIngress, setInterfaceGroups,
    sharedGroupRefusal, wantedAtoms, type Ec2,
} from "../../components/ec2Reconcile";
import { ingressRules } from "../../components/securityGroup";
import { messyIngress, wantedLines } from "./fixtures";
import { motoAccount } from "./harness";
import { REGION } from "./moto";

let ec2: Ec2;

const aws = motoAccount();
before(async () => {
    await aws.ready;
    // The code under test builds its own client from the SDK's standard settings only.
    ec2 = ec2Client(REGION);
});

const RULES = ingressRules({ privateCidrs: ["10.0.0.0/8", "fd00::/8"], adminCidrs: ["203.0.113.0/24", "2001:db8::/48"] });

describe("adopted group: inbound rules reconciled, then restored", () => {
    it("removes allow-all v4+v6, SSH and 80 from anywhere, a group reference, a prefix list, udp and icmp; restores them exactly", async () => {
        const other = await aws.account.group([], "db-clients");
        const groupId = await aws.account.group(messyIngress(other, await aws.account.prefixList()), "launch-wizard");
        const before = await aws.account.snapshot(groupId);
        assert.equal(before.ingress.length, 10, `the messy group as made: ${before.ingress.join("\n")}`);

        const r = await reconcileIngress(ec2, groupId, wantedAtoms(RULES));
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        assert.equal(r.before.length, 10);
        assert.equal(r.revoked.length, 10);

        await restoreIngress(ec2, groupId, r.before);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("works with a group of 60 rules (the per-group limit): revoke before authorize", async () => {
        const sixty: IpPermission[] = Array.from({ length: 60 }, (_, i) => ({
            IpProtocol: "tcp", FromPort: 1000 + i, ToPort: 1000 + i, IpRanges: [{ CidrIp: `10.${i}.0.0/16`, Description: `rule ${i}` }],
        }));
        const groupId = await aws.account.group(sixty, "sixty");
        const before = await aws.account.snapshot(groupId);
        assert.equal(before.ingress.length, 60);
        const r = await reconcileIngress(ec2, groupId, wantedAtoms(RULES));
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        await restoreIngress(ec2, groupId, r.before);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("handles a protocol by number (ESP, 50) and an IPv6 admin network written in upper case", async () => {
        // moto answers 500 to a port-less ESP rule; -1 ports is the form it takes.
        const groupId = await aws.account.group([{ IpProtocol: "50", FromPort: -1, ToPort: -1, IpRanges: [{ CidrIp: "192.0.2.0/24", Description: "vpn esp" }] }], "esp");
        const before = await aws.account.snapshot(groupId);
        const upper = ingressRules({ privateCidrs: ["10.0.0.0/8"], adminCidrs: ["2001:DB8::/48"] });
        const r = await reconcileIngress(ec2, groupId, wantedAtoms(upper));
        assert.deepEqual(r.before.map((a) => [a.protocol, a.fromPort, a.source]), [["50", -1, "192.0.2.0/24"]]);
        assert.ok((await aws.account.ingress(groupId)).includes('tcp 22-22 2001:db8::/48 "SSH for deployment from admin networks"'));
        // A second reconcile finds nothing to do (the case of the address does not read as drift).
        const again = await reconcileIngress(ec2, groupId, wantedAtoms(upper));
        assert.deepEqual([again.revoked, again.authorized], [[], []]);
        await restoreIngress(ec2, groupId, r.before);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("keeps a rule hostguard wants, and re-describes in place one that only differs in its description", async () => {
        const groupId = await aws.account.group([
            { IpProtocol: "tcp", FromPort: 443, ToPort: 443, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "HTTPS from anywhere" }], Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "web" }] },
        ], "partial");
        const r = await reconcileIngress(ec2, groupId, wantedAtoms(RULES));
        assert.deepEqual(r.revoked, [], "nothing revoked: the v6 443 rule only gets its description");
        assert.deepEqual(r.described.map((a) => `${a.source} ${a.description}`), ["::/0 HTTPS from anywhere"]);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
    });

    it("removes a rule added by hand after the first reconcile, and still restores the first original", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "drift");
        const before = await aws.account.snapshot(groupId);
        const first = await reconcileIngress(ec2, groupId, wantedAtoms(RULES));
        await aws.moto.client.send(new AuthorizeSecurityGroupIngressCommand({
            GroupId: groupId, IpPermissions: [{ IpProtocol: "tcp", FromPort: 3306, ToPort: 3306, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "by hand" }] }],
        }));
        assert.ok((await aws.account.ingress(groupId)).includes('tcp 3306-3306 0.0.0.0/0 "by hand"'));
        const second = await reconcileIngress(ec2, groupId, wantedAtoms(RULES));
        assert.deepEqual(second.revoked.map((a) => `${a.protocol} ${a.fromPort} ${a.source}`), ["tcp 3306 0.0.0.0/0"]);
        assert.deepEqual(second.authorized, []);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        await restoreIngress(ec2, groupId, first.before);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("changes nothing when the authorize fails (it comes before any revoke)", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "rollback");
        const before = await aws.account.snapshot(groupId);
        const broken = ingressRules({ privateCidrs: ["10.0.0.0/8"], adminCidrs: [], bastionSecurityGroupId: "sg-0000000000deadbee" });
        await assert.rejects(reconcileIngress(ec2, groupId, wantedAtoms(broken)),
            (e: Error) => e.message.includes(`changing the inbound rules of ${groupId} failed`) && e.message.includes("no rule had been revoked"));
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("puts the early revokes back when the authorize fails at the rules quota", async () => {
        const sixty: IpPermission[] = Array.from({ length: 60 }, (_, i) => ({
            IpProtocol: "tcp", FromPort: 2000 + i, ToPort: 2000 + i, IpRanges: [{ CidrIp: `10.${i}.0.0/16` }],
        }));
        const groupId = await aws.account.group(sixty, "rollback-quota");
        const before = await aws.account.snapshot(groupId);
        const broken = ingressRules({ privateCidrs: ["10.0.0.0/8"], adminCidrs: [], bastionSecurityGroupId: "sg-0000000000deadbee" });
        await assert.rejects(reconcileIngress(ec2, groupId, wantedAtoms(broken)), /its revoked rules were put back/);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("leaves the other group on a two-group interface alone", async () => {
        const other = await aws.account.group([{ IpProtocol: "tcp", FromPort: 8443, ToPort: 8443, IpRanges: [{ CidrIp: "10.9.0.0/16" }] }], "lb");
        const otherBefore = await aws.account.snapshot(other);
        const groupId = await aws.account.group(messyIngress(other, await aws.account.prefixList()), "two");
        const host = await aws.account.instance([groupId, other]);
        await reconcileIngress(ec2, groupId, wantedAtoms(RULES));
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        assert.deepEqual(await aws.account.snapshot(other), otherBefore);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [groupId, other].sort());
    });
});

describe("atoms (no EC2 needed)", () => {
    it("keep a rule without ports without ports, and a same-account group reference without its account", () => {
        const atoms = atomsOf([
            { IpProtocol: "50", IpRanges: [{ CidrIp: "192.0.2.0/24" }] },
            { IpProtocol: "6", FromPort: 5432, ToPort: 5432, UserIdGroupPairs: [{ GroupId: "sg-1", UserId: "111" }, { GroupId: "sg-2", UserId: "222" }] },
        ], "111");
        assert.deepEqual(atoms, [
            { protocol: "50", kind: "cidr4", source: "192.0.2.0/24" },
            { protocol: "tcp", fromPort: 5432, toPort: 5432, kind: "group", source: "sg-1" },
            { protocol: "tcp", fromPort: 5432, toPort: 5432, kind: "group", source: "sg-2", userId: "222" },
        ]);
        assert.deepEqual(permissionsOf(atoms), [
            { IpProtocol: "50", IpRanges: [{ CidrIp: "192.0.2.0/24" }] },
            { IpProtocol: "tcp", FromPort: 5432, ToPort: 5432, UserIdGroupPairs: [{ GroupId: "sg-1" }] },
            { IpProtocol: "tcp", FromPort: 5432, ToPort: 5432, UserIdGroupPairs: [{ GroupId: "sg-2", UserId: "222" }] },
        ]);
    });
});

describe("shared-group guard", () => {
    it("names the instance outside the stack that carries the group, and accepts it when opted in", async () => {
        const groupId = await aws.account.group([], "shared");
        const mine = await aws.account.instance([groupId]);
        const theirs = await aws.account.instance([groupId]);
        const users = await interfacesCarrying(ec2, groupId);
        assert.deepEqual(users.map((u) => u.instanceId).sort(), [mine.instanceId, theirs.instanceId].sort());

        const foreign = foreignUsers(users, [mine.instanceId], []);
        assert.deepEqual(foreign.map((u) => u.instanceId), [theirs.instanceId]);
        const refusal = sharedGroupRefusal(groupId, foreign, "hostguard:sharedSecurityGroupInstances");
        assert.match(refusal, new RegExp(`instance ${theirs.instanceId} \\(${theirs.networkInterfaceId}\\)`));
        assert.match(refusal, /hostguard:sharedSecurityGroupInstances\[0\]/);
        assert.doesNotMatch(refusal, new RegExp(mine.instanceId));

        assert.deepEqual(foreignUsers(users, [mine.instanceId], [theirs.instanceId]), []);
        assert.equal(sharedGroupRefusal(groupId, [], "k"), "");
        // Without the stack's own instance id, its server counts as foreign too.
        assert.equal(foreignUsers(users, [], []).length, 2);
    });

    it("names an interface without an instance (a load balancer's, say) by its id, and accepts it by that id", async () => {
        const groupId = await aws.account.group([], "shared-eni");
        const eni = await aws.moto.client.send(new CreateNetworkInterfaceCommand({ SubnetId: aws.account.subnetId, Groups: [groupId], Description: "ELB app/web" }));
        const eniId = eni.NetworkInterface!.NetworkInterfaceId!;
        const users = await interfacesCarrying(ec2, groupId);
        assert.deepEqual(users, [{ networkInterfaceId: eniId, description: "ELB app/web" }]);
        assert.match(sharedGroupRefusal(groupId, foreignUsers(users, [], []), "k"), new RegExp(`interface ${eniId} "ELB app/web".*set --path 'k\\[0\\]' ${eniId}`));
        assert.deepEqual(foreignUsers(users, [], [eniId]), []);
    });

    it("finds nobody on a group no interface carries", async () => {
        assert.deepEqual(await interfacesCarrying(ec2, await aws.account.group([], "unused")), []);
    });
});

describe("created group: the instance's primary interface", () => {
    it("ends with exactly [hostguard, kept...] and gets its previous set back", async () => {
        const allowAll = await aws.account.group([{ IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0" }] }], "default-ish");
        const lb = await aws.account.group([], "lb");
        const extra = await aws.account.group([], "extra");
        const hostguard = await aws.account.group(messyIngress(lb, await aws.account.prefixList()).slice(0, 0), "hostguard");
        const host = await aws.account.instance([allowAll, lb, extra]);

        const [primary] = (await instanceInterfaces(ec2, host.instanceId))!;
        assert.equal(primary.networkInterfaceId, host.networkInterfaceId);
        assert.deepEqual([...primary.groups].sort(), [allowAll, lb, extra].sort());

        await setInterfaceGroups(ec2, primary.networkInterfaceId, [hostguard, lb]);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard, lb].sort());

        await setInterfaceGroups(ec2, primary.networkInterfaceId, primary.groups);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll, lb, extra].sort());
    });

    it("finds no interfaces for an instance that does not exist", async () => {
        assert.equal(await instanceInterfaces(ec2, "i-0123456789abcdef0"), null);
    });
});
