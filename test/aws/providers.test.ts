// The dynamic providers of adoptedGroup.ts and interfaceGroups.ts against
// moto's EC2 API (issue 15), called the way the engine calls them: check on
// preview, create on the first up, read on refresh, diff, update, delete on
// destroy. What EC2 ends up with is read by the test itself.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AuthorizeSecurityGroupIngressCommand, ModifyNetworkInterfaceAttributeCommand } from "@aws-sdk/client-ec2";
import { ADOPTED_GROUP_KIND, adoptedGroupProvider, type AdoptedGroupState } from "../../components/adoptedGroup";
import { interfaceGroupsProvider, type InterfaceGroupsState } from "../../components/interfaceGroups";
import { adoptStack, createStack, destroy, refresh, RULES, up } from "./engine";
import { messyIngress, wantedLines } from "./fixtures";
import { motoAccount } from "./harness";
import { REGION } from "./moto";

const p = adoptedGroupProvider as Required<typeof adoptedGroupProvider>;
const q = interfaceGroupsProvider as Required<typeof interfaceGroupsProvider>;

const aws = motoAccount();

function adoptInputs(groupId: string, over: Partial<AdoptedGroupState> = {}): AdoptedGroupState {
    return { kind: ADOPTED_GROUP_KIND, region: REGION, groupId, ingress: RULES, stackInstanceIds: [], sharedInstances: [], original: [], ...over };
}

describe("adopted group ingress provider", () => {
    it("up makes the rules exactly hostguard's, refresh sees a hand-added rule, update removes it, destroy restores the original", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "launch-wizard");
        const host = await aws.account.instance([groupId]);
        const before = await aws.account.snapshot(groupId);
        const inputs = adoptInputs(groupId, { stackInstanceIds: [host.instanceId] });

        // preview: the guard passes (the only interface is the stack's), nothing changes yet.
        assert.deepEqual((await p.check({}, inputs)).failures, []);
        assert.deepEqual(await aws.account.snapshot(groupId), before);

        // up: the record first, then the change
        const steps = adoptStack(groupId, RULES, [host.instanceId]);
        const cp = await up(steps);
        assert.equal(cp.ingress.id, groupId);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        assert.equal(cp.record.outs.original.length, before.ingress.length);
        assert.deepEqual(cp.ingress.outs.original, cp.record.outs.original, "the change holds the record");
        assert.equal((await p.diff(groupId, cp.ingress.outs, steps[1].inputs(cp))).changes, false, "no changes right after the up");

        // a rule added by hand: a plain preview reads it live and plans an update, refresh shows it, the update removes it.
        await aws.moto.client.send(new AuthorizeSecurityGroupIngressCommand({
            GroupId: groupId, IpPermissions: [{ IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "by hand" }] }],
        }));
        assert.deepEqual(await p.diff(groupId, cp.ingress.outs, steps[1].inputs(cp)), { changes: true, replaces: [], deleteBeforeReplace: true }, "drift without --refresh");
        await refresh(steps, cp);
        const state = cp.ingress.outs as AdoptedGroupState;
        assert.deepEqual(state.actual!["tcp|80-80|cidr4|0.0.0.0/0"], { protocol: "tcp", fromPort: 80, toPort: 80, kind: "cidr4", source: "0.0.0.0/0", description: "by hand" },
            "refresh shows the hand-added rule");
        assert.equal(cp.record.outs.original.length, before.ingress.length, "refresh keeps the record");
        await up(steps, cp);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        assert.equal((await p.diff(groupId, cp.ingress.outs, steps[1].inputs(cp))).changes, false);

        // destroy
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("preview refuses a group that an instance outside the stack carries, naming it and the key; the opt-in accepts it", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "default");
        const mine = await aws.account.instance([groupId]);
        const theirs = await aws.account.instance([groupId]);
        const before = await aws.account.snapshot(groupId);

        const refused = await p.check({}, adoptInputs(groupId, { stackInstanceIds: [mine.instanceId] }));
        assert.equal(refused.failures!.length, 1);
        assert.equal(refused.failures![0].property, "groupId");
        assert.match(refused.failures![0].reason, new RegExp(`instance ${theirs.instanceId} .*not a host of this stack`));
        assert.match(refused.failures![0].reason, /hostguard:sharedSecurityGroupInstances/);
        assert.deepEqual(await aws.account.snapshot(groupId), before, "the refusal changed nothing");

        const accepted = await p.check({}, adoptInputs(groupId, { stackInstanceIds: [mine.instanceId], sharedInstances: [theirs.instanceId] }));
        assert.deepEqual(accepted.failures, []);
    });

    it("a change of the opt-in or the hosts is an update that only rechecks; another group id is a replacement", async () => {
        const groupId = await aws.account.group([], "quiet");
        const steps = adoptStack(groupId, RULES);
        const cp = await up(steps);
        const inputs = steps[1].inputs(cp);
        assert.equal((await p.diff(groupId, cp.ingress.outs, { ...inputs, sharedInstances: ["i-0123456789abcdef0"] })).changes, true);
        assert.deepEqual((await p.diff(groupId, cp.ingress.outs, { ...inputs, groupId: "sg-0123456789abcdef0" })).replaces, ["groupId"]);
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.ingress(groupId), []);
    });
});

describe("interface groups provider (created group)", () => {
    it("up leaves exactly [hostguard, kept], a preview sees a group added by hand, update removes it, destroy restores the previous set", async () => {
        const allowAll = await aws.account.group([{ IpProtocol: "-1", IpRanges: [{ CidrIp: "0.0.0.0/0" }] }], "default");
        const lb = await aws.account.group([], "lb");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll, lb]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard, lb]);

        const cp = await up(steps);
        assert.equal(cp.interfaces.id, `${host.instanceId}/${host.networkInterfaceId}`);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard, lb].sort());
        assert.deepEqual(cp.record.outs.originals, { [host.networkInterfaceId]: [allowAll, lb] });
        assert.equal((await q.diff(cp.interfaces.id, cp.interfaces.outs, steps[1].inputs(cp))).changes, false);

        await aws.moto.client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: host.networkInterfaceId, Groups: [hostguard, lb, allowAll] }));
        assert.equal((await q.diff(cp.interfaces.id, cp.interfaces.outs, steps[1].inputs(cp))).changes, true, "drift without --refresh");
        await refresh(steps, cp);
        assert.deepEqual([...(cp.interfaces.outs as InterfaceGroupsState).actual![host.networkInterfaceId]].sort(), [hostguard, lb, allowAll].sort());
        await up(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard, lb].sort());

        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll, lb].sort());
    });
});
