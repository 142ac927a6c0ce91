// Issue 41 against moto's EC2 API: a host removed from the stack on both
// paths, and an original that is someone else's hostguard change (another
// stack's group on an interface, hostguard's rules in an adopted group). The
// providers are called the way the engine calls them (engine.ts); what EC2
// ends up with is read by the test itself.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CreateTagsCommand, ModifyNetworkInterfaceAttributeCommand } from "@aws-sdk/client-ec2";
import { adoptedGroupProvider } from "../../components/adoptedGroup";
import { adoptStack, createStack, destroy, up, RULES, type Checkpoint } from "./engine";
import { ALLOW_ALL, wantedLines } from "./fixtures";
import { motoAccount, warningsOf } from "./harness";

const aws = motoAccount();

/** A group tagged as hostguard's, as another stack's aws.ec2.SecurityGroup is. */
async function hostguardGroup(label: string): Promise<string> {
    const id = await aws.account.group([{ IpProtocol: "tcp", FromPort: 443, ToPort: 443, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "HTTPS from anywhere" }] }], label);
    await aws.account.client.send(new CreateTagsCommand({ Resources: [id], Tags: [{ Key: "managed-by", Value: "hostguard" }] }));
    return id;
}

describe("removing one host of two", () => {
    it("adopt: the removed server still carrying the group is a warning naming it and the way out, not a refusal; the group stays hardened", async () => {
        const groupId = await aws.account.group(ALLOW_ALL, "adopted-two");
        const a = await aws.account.instance([groupId]);
        const b = await aws.account.instance([groupId]);
        const cp = await up(adoptStack(groupId, RULES, [a.instanceId, b.instanceId]));
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));

        // hosts[1] deleted from hostguard:hosts.
        const steps = adoptStack(groupId, RULES, [a.instanceId]);
        const warnings = await warningsOf(() => up(steps, cp));
        assert.equal(warnings.length, 1, warnings.join("\n"));
        assert.match(warnings[0], new RegExp(`instance ${b.instanceId} is no longer a host of this stack .* interface ${b.networkInterfaceId} still carries the adopted group ${groupId}`));
        assert.match(warnings[0], new RegExp(`modify-network-interface-attribute --network-interface-id ${b.networkInterfaceId} --groups`));
        assert.deepEqual(cp.ingress.outs.removedInstances, [b.instanceId]);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES), "the group stays hardened");

        // The next preview still accepts it (the state remembers the removed host), with the same warning.
        let again: Awaited<ReturnType<NonNullable<typeof adoptedGroupProvider.check>>> | undefined;
        const warnedAgain = await warningsOf(async () => (again = await adoptedGroupProvider.check!(cp.ingress.outs, steps[1].inputs(cp))));
        assert.deepEqual(warnedAgain, warnings);
        assert.deepEqual(again!.failures, []);
        assert.deepEqual(again!.inputs.removedInstances, [b.instanceId]);

        // The user takes the group off the removed server: it drops out; put back by hand, it is a server outside the stack again.
        await aws.account.client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: b.networkInterfaceId, Groups: [await aws.account.group([], "b-own")] }));
        assert.deepEqual(await warningsOf(() => up(steps, cp)), []);
        assert.deepEqual(cp.ingress.outs.removedInstances, []);
        await aws.account.client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: b.networkInterfaceId, Groups: [groupId] }));
        const refused = await adoptedGroupProvider.check!(cp.ingress.outs, steps[1].inputs(cp));
        assert.match(String(refused.failures?.[0]?.reason), new RegExp(`also used by instance ${b.instanceId}`));

        await destroy(steps, cp);
        assert.deepEqual(await aws.account.ingress(groupId), ['-1 all 0.0.0.0/0 "allow all"']);
    });

    it("create path: the removed host's interfaces get their recorded groups back, the other host stays closed", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const a = await aws.account.instance([allowAll]);
        const b = await aws.account.instance([allowAll]);
        const second = await aws.account.secondaryInterface(b.instanceId, [allowAll]);
        const stackA = createStack(a.instanceId, aws.account.vpcId, [hostguard]);
        const stackB = createStack(b.instanceId, aws.account.vpcId, [hostguard]);
        const cpA = await up(stackA);
        const cpB = await up(stackB);
        assert.deepEqual(await aws.account.groupsOn(second), [hostguard]);

        // hosts[1] deleted: the engine deletes its two resources (the dependent first).
        await destroy(stackB, cpB);
        assert.deepEqual(await aws.account.groupsOn(b.networkInterfaceId), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(second), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(a.networkInterfaceId), [hostguard], "the remaining host is untouched");
        await up(stackA, cpA);
        assert.deepEqual(await aws.account.groupsOn(a.networkInterfaceId), [hostguard]);
        await destroy(stackA, cpA);
        assert.deepEqual(await aws.account.groupsOn(a.networkInterfaceId), [allowAll]);
    });
});

describe("renaming a host (create path)", () => {
    it("the new name's record is refused before any change, saying a rename is the cause and the way on; removing and adding back works", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const web1 = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(web1);
        // hosts[0].name web1 -> web-1: Pulumi creates web-1's resources before it deletes web1's.
        const err = await up(createStack(host.instanceId, aws.account.vpcId, [hostguard])).then(() => null, (e: Error) => e);
        assert.match(String(err?.message), new RegExp(`already carries hostguard's group ${hostguard}.*If you renamed the host in hostguard:hosts .* put the old name back, `
            + "or remove the host in one up and add it under its new name in the next"));
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard], "nothing changed");
        // The way on: removed in one up (its interfaces get their groups back), added under the new name in the next.
        await destroy(web1, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
        const renamed = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp2 = await up(renamed);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard]);
        await destroy(renamed, cp2);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
    });
});

describe("never someone else's group as the original", () => {
    it("create path: an interface carrying another stack's hostguard group (tagged) is refused, naming it and the way out; nothing changes", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const otherStacks = await hostguardGroup("other-stack-hostguard");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const second = await aws.account.secondaryInterface(host.instanceId, [otherStacks]);
        const cp: Checkpoint = {};
        const err = await up(createStack(host.instanceId, aws.account.vpcId, [hostguard]), cp).then(() => null, (e: Error) => e);
        assert.match(String(err?.message), new RegExp(`network interface ${second} of instance ${host.instanceId} already carries ${otherStacks}, a group a hostguard stack created`));
        assert.match(String(err?.message), /take its instanceId out of one of the two stacks' hosts/);
        assert.match(String(err?.message), new RegExp(`modify-network-interface-attribute --network-interface-id ${second} --groups sg-.*and delete ${otherStacks} if no stack uses it, then run up again`));
        assert.deepEqual(cp, {}, "no record");
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(second), [otherStacks]);
    });

    it("adopt path: an original holding a rule with hostguard's description is refused whatever its source, naming the rule and the way out", async () => {
        const groupId = await aws.account.group([
            { IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "198.51.100.0/24", Description: "SSH for deployment from admin networks" }] },
            { IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "web" }] },
        ], "other-stack-adopted");
        const before = await aws.account.snapshot(groupId);
        const cp: Checkpoint = {};
        const err = await up(adoptStack(groupId, RULES), cp).then(() => null, (e: Error) => e);
        assert.match(String(err?.message), new RegExp(`security group ${groupId} already holds hostguard's inbound rules \\(tcp 22 from 198\\.51\\.100\\.0/24 \\("SSH for deployment from admin networks"\\)\\)`));
        assert.match(String(err?.message), /give this stack's servers a group of their own .*update-security-group-rule-descriptions-ingress.*run up again/);
        assert.deepEqual(cp, {});
        assert.deepEqual(await aws.account.snapshot(groupId), before, "nothing changed");
    });

    it("adopt path: a group another stack created (tagged, hostguard's HTTPS rule) is refused too", async () => {
        const groupId = await hostguardGroup("created-elsewhere");
        const err = await up(adoptStack(groupId, RULES)).then(() => null, (e: Error) => e);
        assert.match(String(err?.message), new RegExp(`security group ${groupId} already holds hostguard's inbound rules`));
    });
});
