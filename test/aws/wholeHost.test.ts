// Issue 24 against moto's EC2 API: the server is closed, not one group. Every
// interface and every group of the stack's instances, a failure after the
// change that keeps what to restore (a fault-injecting proxy in front of
// moto), instances that go away, and 443 open at every moment of a reconcile.
// The providers are called the way the engine calls them; what EC2 ends up
// with is read by the test itself.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
    DeleteNetworkInterfaceCommand, DeleteSecurityGroupCommand, DescribeNetworkInterfacesCommand, DetachNetworkInterfaceCommand,
    ModifyNetworkInterfaceAttributeCommand, RevokeSecurityGroupIngressCommand,
} from "@aws-sdk/client-ec2";
import { ADOPTED_GROUP_KIND, adoptedGroupProvider, type AdoptedGroupState } from "../../components/adoptedGroup";
import { INTERFACE_GROUPS_KIND, interfaceGroupsProvider, type InterfaceGroupsState } from "../../components/interfaceGroups";
import { ec2Client, reconcileIngress, restoreIngress, wantedAtoms, type Ec2 } from "../../components/ec2Reconcile";
import { adoptStack, createStack, destroy, refresh, RULES, up, type Checkpoint } from "./engine";
import { ALLOW_ALL, messyIngress, wantedLines } from "./fixtures";
import { motoAccount, withFaultProxy } from "./harness";
import { REGION, useEndpoint } from "./moto";

const p = adoptedGroupProvider as Required<typeof adoptedGroupProvider>;
const q = interfaceGroupsProvider as Required<typeof interfaceGroupsProvider>;

const aws = motoAccount();

const HTTP_ANYWHERE = [{ IpProtocol: "tcp", FromPort: 80, ToPort: 80, Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "http v6" }] }];

function adoptInputs(groupId: string, over: Partial<AdoptedGroupState> = {}): AdoptedGroupState {
    return { kind: ADOPTED_GROUP_KIND, region: REGION, groupId, ingress: RULES, stackInstanceIds: [], sharedInstances: [], original: [], ...over };
}
function interfaceInputs(instanceId: string, groups: string[]): InterfaceGroupsState {
    return { kind: INTERFACE_GROUPS_KIND, region: REGION, instanceId, vpcId: aws.account.vpcId, groups, ingress: RULES, originals: {} };
}

describe("create path: every interface of the instance", () => {
    it("a secondary interface with an Elastic IP ends with exactly [hostguard, kept] too, and both get their sets back", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const web80 = await aws.account.group(HTTP_ANYWHERE, "web80");
        const lb = await aws.account.group([], "lb");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const second = await aws.account.secondaryInterface(host.instanceId, [allowAll, web80]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard, lb]);

        const cp = await up(steps);
        assert.equal(cp.interfaces.id, `${host.instanceId}/${host.networkInterfaceId}`);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard, lb].sort());
        assert.deepEqual(await aws.account.groupsOn(second), [hostguard, lb].sort(), "the secondary interface is closed too");
        assert.deepEqual(cp.record.outs.originals, { [host.networkInterfaceId]: [allowAll], [second]: [allowAll, web80] });
        assert.equal((await q.diff(cp.interfaces.id, cp.interfaces.outs, steps[1].inputs(cp))).changes, false);

        // A group put back by hand on the secondary interface only: the next up removes it.
        await aws.account.client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: second, Groups: [hostguard, lb, allowAll] }));
        assert.equal((await q.diff(cp.interfaces.id, cp.interfaces.outs, steps[1].inputs(cp))).changes, true);
        await up(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(second), [hostguard, lb].sort());

        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(second), [allowAll, web80].sort());
    });

    it("an interface attached after the first up is recorded when first seen and restored on destroy", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        const second = await aws.account.secondaryInterface(host.instanceId, [allowAll]);
        assert.equal((await (steps[0].provider.diff!)(cp.record.id, cp.record.outs, steps[0].inputs(cp))).changes, true,
            "a plain preview sees the new interface (the record updates first)");
        await up(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(second), [hostguard]);
        assert.deepEqual(cp.record.outs.originals[second], [allowAll]);
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(second), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
    });

    it("preview refuses a kept group that lets more than 443 in from anywhere, naming group, rule and interface", async () => {
        const keptAllowAll = await aws.account.group(ALLOW_ALL, "kept-open");
        const keptFine = await aws.account.group([{ IpProtocol: "tcp", FromPort: 443, ToPort: 443, IpRanges: [{ CidrIp: "0.0.0.0/0" }] },
            { IpProtocol: "tcp", FromPort: 9000, ToPort: 9000, IpRanges: [{ CidrIp: "10.0.0.0/8" }] }], "kept-fine");
        const host = await aws.account.instance([keptFine]);
        const refused = await q.check({}, interfaceInputs(host.instanceId, ["04da6b54-80e4-46f7-96ec-b56ff0331ba9", keptFine, keptAllowAll]));
        assert.equal(refused.failures!.length, 1);
        assert.equal(refused.failures![0].property, "groups");
        assert.match(refused.failures![0].reason, new RegExp(`group ${keptAllowAll} on interface ${host.networkInterfaceId} of instance ${host.instanceId} lets in all traffic from 0.0.0.0/0`));
        assert.match(refused.failures![0].reason, /keepSecurityGroupIds/);
        assert.doesNotMatch(refused.failures![0].reason, new RegExp(keptFine));
        assert.deepEqual(refused.inputs.worldReachable, ["all traffic", "tcp 443"]);
        assert.deepEqual((await q.check({}, interfaceInputs(host.instanceId, ["sg-00000000", keptFine]))).failures, [],
            "hostguard's group (unknown or not) is never read as kept; a kept group with only 443 public passes");
    });

    it("preview refuses an instance that does not exist, naming the key", async () => {
        const r = await q.check({}, interfaceInputs("i-0123456789abcdef0", ["sg-00000000"]));
        assert.equal(r.failures![0].property, "instanceId");
        assert.match(r.failures![0].reason, /i-0123456789abcdef0 \(a hosts\[\]\.instanceId\) does not exist/);
    });
});

describe("adopt path: every other group on every interface is read", () => {
    it("preview refuses a second group on the interface (launch-wizard allow-all) and a port-80 group on a secondary interface", async () => {
        const adopted = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "adopted");
        const wizard = await aws.account.group(ALLOW_ALL, "launch-wizard-1");
        const web80 = await aws.account.group(HTTP_ANYWHERE, "web80");
        const host = await aws.account.instance([adopted, wizard]);
        const second = await aws.account.secondaryInterface(host.instanceId, [web80]);
        const before = await aws.account.snapshot(adopted);

        const r = await p.check({}, adoptInputs(adopted, { stackInstanceIds: [host.instanceId] }));
        assert.equal(r.failures!.length, 1, JSON.stringify(r.failures));
        const reason = r.failures![0].reason;
        assert.equal(r.failures![0].property, "stackInstanceIds");
        assert.match(reason, new RegExp(`group ${wizard} on interface ${host.networkInterfaceId} of instance ${host.instanceId} lets in all traffic from 0.0.0.0/0`));
        assert.match(reason, new RegExp(`group ${web80} on interface ${second} \\(public [0-9.]+\\) of instance ${host.instanceId} lets in tcp 80 from ::/0`));
        assert.match(reason, /reachable from anywhere on tcp 443, all traffic, tcp 80/);
        assert.deepEqual(r.inputs.worldReachable, { [host.instanceId]: ["all traffic", "tcp 443", "tcp 80"] }, "what preview shows");
        assert.doesNotMatch(reason, new RegExp(`group ${adopted}`), "the adopted group's own rules are hostguard's to change, not a refusal");
        assert.deepEqual(await aws.account.snapshot(adopted), before, "a preview changes nothing");

        // Once the other groups are closed, preview passes.
        await aws.account.client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: host.networkInterfaceId, Groups: [adopted] }));
        await aws.account.client.send(new RevokeSecurityGroupIngressCommand({ GroupId: web80, IpPermissions: HTTP_ANYWHERE }));
        const passed = await p.check({}, adoptInputs(adopted, { stackInstanceIds: [host.instanceId] }));
        assert.deepEqual(passed.failures, []);
        assert.deepEqual(passed.inputs.worldReachable, { [host.instanceId]: ["tcp 443"] }, "after the up, only 443 from anywhere");
    });
});

describe("open to the world by the union rule (issue 33), on every stack instance", () => {
    it("adopt: SSH to 0.0.0.0/1 + 128.0.0.0/1 on a second group and everything to ::/1 + 8000::/1 on a secondary interface are refused", async () => {
        const adopted = await aws.account.group([], "adopted");
        const halves = await aws.account.group([{ IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "0.0.0.0/1" }, { CidrIp: "128.0.0.0/1" }] }], "halves");
        const v6a = await aws.account.group([{ IpProtocol: "-1", Ipv6Ranges: [{ CidrIpv6: "::/1" }] }], "v6-low");
        const v6b = await aws.account.group([{ IpProtocol: "-1", Ipv6Ranges: [{ CidrIpv6: "8000::/1" }] }], "v6-high");
        const host = await aws.account.instance([adopted, halves]);
        const second = await aws.account.secondaryInterface(host.instanceId, [v6a, v6b]);
        const r = await p.check({}, adoptInputs(adopted, { stackInstanceIds: [host.instanceId] }));
        assert.equal(r.failures!.length, 1, JSON.stringify(r.failures));
        const reason = r.failures![0].reason;
        assert.match(reason, new RegExp(`group ${halves} on interface ${host.networkInterfaceId} of instance ${host.instanceId} lets in tcp 22 from 0.0.0.0/1, tcp 22 from 128.0.0.0/1`));
        assert.match(reason, new RegExp(`group ${v6a} on interface ${second} .*lets in all traffic from ::/1`));
        assert.match(reason, new RegExp(`group ${v6b} on interface ${second} .*lets in all traffic from 8000::/1`));
        assert.deepEqual(r.inputs.worldReachable, { [host.instanceId]: ["all traffic", "tcp 22", "tcp 443"] });
    });

    it("adopt: SSH from a /16 on a second group is refused together with hostguard's own SSH sources (a /16 plus a /24 is beyond the limit)", async () => {
        const adopted = await aws.account.group([], "adopted");
        const wide16 = await aws.account.group([{ IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "198.18.0.0/16" }] }], "wide16");
        const host = await aws.account.instance([adopted, wide16]);
        const r = await p.check({}, adoptInputs(adopted, { stackInstanceIds: [host.instanceId] }));
        assert.match(r.failures![0]?.reason ?? "", new RegExp(`group ${wide16} .* lets in tcp 22 from 198.18.0.0/16`));
    });

    it("adopt: an instance of the stack that does not carry the adopted group is refused, naming it", async () => {
        const adopted = await aws.account.group([], "adopted");
        const other = await aws.account.group([], "other");
        const host = await aws.account.instance([other]);
        const r = await p.check({}, adoptInputs(adopted, { stackInstanceIds: [host.instanceId] }));
        assert.match(r.failures![0]?.reason ?? "", new RegExp(`instance ${host.instanceId} .*does not carry the adopted group ${adopted}`));
    });

    it("create path: a kept group opening SSH to both halves of the internet is refused", async () => {
        const halves = await aws.account.group([{ IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "0.0.0.0/1" }, { CidrIp: "128.0.0.0/1" }] }], "kept-halves");
        const host = await aws.account.instance([halves]);
        const r = await q.check({}, interfaceInputs(host.instanceId, ["sg-00000000", halves]));
        assert.equal(r.failures![0]?.property, "groups");
        assert.match(r.failures![0].reason, /reachable from anywhere on tcp 443, tcp 22/);
    });
});

describe("nothing to restore is lost when a call fails after the change (fault-injecting proxy)", () => {
        withFaultProxy(aws);
    const throttleAfter = (change: string, reads: string) => {
        let changed = false;
        aws.proxy.rule = (action) => {
            if (action === change) {
                changed = true;
            }
            return changed && action === reads;
        };
    };
    const viaProxy = () => {
        useEndpoint(aws.proxy.endpoint);
        process.env.AWS_MAX_ATTEMPTS = "2";
        process.env.HOSTGUARD_READBACK_TRIES = "2";
    };

    it("adopt: a throttled read-back after the rules changed keeps the resource; the next up and destroy restore the true original", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "throttled");
        const before = await aws.account.snapshot(groupId);
        const steps = adoptStack(groupId, RULES);
        const cp: Checkpoint = {};
        viaProxy();
        throttleAfter("AuthorizeSecurityGroupIngress", "DescribeSecurityGroups");
        const err = await up(steps, cp).then(() => null, (e) => e);
        assert.ok(err, "up failed");
        assert.match(err.message, /RequestLimitExceeded|Request limit exceeded/);
        assert.equal(err.id, groupId, "the error carries the id: the engine keeps the resource");
        assert.equal(cp.ingress.outs.original.length, before.ingress.length, "and the original rules");
        assert.ok(aws.proxy.calls.includes("!DescribeSecurityGroups"));

        aws.proxy.rule = () => false;
        await up(steps, cp);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.snapshot(groupId), before, "the real original is back, not hostguard's rules");
    });

    it("create path: a throttled read-back after the interfaces changed keeps the resource; destroy restores every interface", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const second = await aws.account.secondaryInterface(host.instanceId, [allowAll]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp: Checkpoint = {};
        viaProxy();
        throttleAfter("ModifyNetworkInterfaceAttribute", "DescribeNetworkInterfaces");
        const err = await up(steps, cp).then(() => null, (e) => e);
        assert.ok(err, "up failed");
        assert.equal(err.id, `${host.instanceId}/${host.networkInterfaceId}`);
        assert.deepEqual(cp.interfaces.outs.originals, { [host.networkInterfaceId]: [allowAll], [second]: [allowAll] });

        aws.proxy.rule = () => false;
        await up(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(second), [hostguard]);
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(second), [allowAll]);
    });

    it("a throttle the SDK's retries absorb is no failure (adaptive retries, more attempts)", async () => {
        const groupId = await aws.account.group(HTTP_ANYWHERE, "retried");
        useEndpoint(aws.proxy.endpoint);
        aws.proxy.rule = (action, n) => action === "DescribeSecurityGroups" && n % 2 === 1;
        const steps = adoptStack(groupId, RULES);
        const cp = await up(steps);
        assert.equal(cp.ingress.id, groupId);
        assert.ok(aws.proxy.calls.filter((c) => c === "!DescribeSecurityGroups").length >= 1);
        aws.proxy.rule = () => false;
        await destroy(steps, cp);
    });
});

describe("instances and groups that come and go", () => {
    it("create path: an instance gone with all its interfaces drops both resources on refresh, and destroy succeeds", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const second = await aws.account.secondaryInterface(host.instanceId, [allowAll]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        // The secondary interface is detached and deleted first, then the instance goes.
        await aws.account.client.send(new DetachNetworkInterfaceCommand({ AttachmentId: (await aws.account.client.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [second] }))).NetworkInterfaces![0].Attachment!.AttachmentId! }));
        await aws.account.client.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: second }));
        await aws.account.terminate(host.instanceId);
        await refresh(steps, cp);
        assert.deepEqual(Object.keys(cp), [], "refresh drops both");
        await destroy(steps, cp);
    });

    it("create path: an original group deleted meanwhile is skipped, the others restored", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const temp = await aws.account.group([], "temporary");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll, temp]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: temp }));
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
    });

    it("adopt path: a deleted group drops the resources on refresh, and destroy succeeds; a referenced group deleted is skipped", async () => {
        const gone = await aws.account.group([], "gone");
        const referenced = await aws.account.group([], "referenced");
        const groupId = await aws.account.group([
            { IpProtocol: "tcp", FromPort: 5432, ToPort: 5432, UserIdGroupPairs: [{ GroupId: referenced, Description: "db" }] },
            { IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "ssh" }] },
        ], "refs");
        const steps = adoptStack(groupId, RULES);
        const cp = await up(steps);
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: referenced }));
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.ingress(groupId), ['tcp 22-22 0.0.0.0/0 "ssh"']);

        const steps2 = adoptStack(gone, RULES);
        const cp2 = await up(steps2);
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: gone }));
        await refresh(steps2, cp2);
        assert.deepEqual(Object.keys(cp2), []);
        await destroy(steps2, cp2);
    });

    it("adopt path: preview names a hosts[].instanceId that is terminated", async () => {
        const groupId = await aws.account.group([], "adopted");
        const host = await aws.account.instance([groupId]);
        await aws.account.terminate(host.instanceId);
        const r = await p.check({}, adoptInputs(groupId, { stackInstanceIds: [host.instanceId] }));
        assert.ok(r.failures!.some((f) => f.reason.includes(`instance ${host.instanceId} (a hosts[].instanceId) does not exist or is terminated`)));
    });
});

describe("no gap on 443", () => {
    /** The calls the reconcile makes, and whether 443 was open from anywhere (v4 and v6) after each. */
    async function recorded(groupId: string): Promise<{ client: Ec2; calls: string[] }> {
        const real = ec2Client(REGION);
        const calls: string[] = [];
        const client: Ec2 = {
            async send(command: unknown) {
                const out = await real.send(command);
                const name = (command as object).constructor.name.replace(/Command$/, "");
                if (!name.startsWith("Describe")) {
                    const lines = await aws.account.ingress(groupId);
                    const open = ["0.0.0.0/0", "::/0"].every((w) => lines.some((l) => l.startsWith(`tcp 443-443 ${w} `)));
                    calls.push(`${name}${open ? "" : " (443 CLOSED)"}`);
                }
                return out;
            },
        };
        return { client, calls };
    }

    it("a description change is made in place and authorize comes before revoke: 443 is open after every call", async () => {
        const groupId = await aws.account.group([
            { IpProtocol: "tcp", FromPort: 443, ToPort: 443, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "web" }], Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "web6" }] },
            ...ALLOW_ALL, ...HTTP_ANYWHERE,
        ], "web");
        const { client, calls } = await recorded(groupId);
        await reconcileIngress(client, groupId, wantedAtoms(RULES));
        assert.deepEqual(calls, ["UpdateSecurityGroupRuleDescriptionsIngress", "AuthorizeSecurityGroupIngress", "RevokeSecurityGroupIngress"]);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
    });

    it("when EC2 counts the quota otherwise than planned, it starts again revoking what does not let 443 in first; 443 stays open", async () => {
        // 39 IPv4 + 19 IPv6 rules + 443 (v4, v6): the plan counts per family (AWS's rule) and authorizes first;
        // moto counts both families together and refuses, so the reconcile takes the next order.
        const perms = [
            { IpProtocol: "tcp", FromPort: 443, ToPort: 443, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "web" }], Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "web6" }] },
            ...Array.from({ length: 39 }, (_, i) => ({ IpProtocol: "tcp", FromPort: 4000 + i, ToPort: 4000 + i, IpRanges: [{ CidrIp: `10.${i}.0.0/16` }] })),
            ...Array.from({ length: 19 }, (_, i) => ({ IpProtocol: "tcp", FromPort: 5000 + i, ToPort: 5000 + i, Ipv6Ranges: [{ CidrIpv6: `fd00:${i}::/32` }] })),
        ];
        const groupId = await aws.account.group(perms, "counted");
        const before = await aws.account.snapshot(groupId);
        const { client, calls } = await recorded(groupId);
        const r = await reconcileIngress(client, groupId, wantedAtoms(RULES));
        assert.deepEqual(calls, ["UpdateSecurityGroupRuleDescriptionsIngress", "RevokeSecurityGroupIngress", "AuthorizeSecurityGroupIngress"]);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        assert.deepEqual(r.before.filter((a) => a.fromPort === 443).map((a) => a.description), ["web", "web6"], "the original is the first reading");
        await restoreIngress(ec2Client(REGION), groupId, r.before);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("at the 60-rule quota the revokes that do not let 443 in go first, and 443 stays open", async () => {
        const perms = [
            { IpProtocol: "tcp", FromPort: 443, ToPort: 443, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "web" }], Ipv6Ranges: [{ CidrIpv6: "::/0", Description: "web6" }] },
            ...Array.from({ length: 58 }, (_, i) => ({ IpProtocol: "tcp", FromPort: 3000 + i, ToPort: 3000 + i, IpRanges: [{ CidrIp: `10.${i}.0.0/16` }] })),
        ];
        const groupId = await aws.account.group(perms, "full");
        const { client, calls } = await recorded(groupId);
        await reconcileIngress(client, groupId, wantedAtoms(RULES));
        assert.deepEqual(calls, ["UpdateSecurityGroupRuleDescriptionsIngress", "RevokeSecurityGroupIngress", "AuthorizeSecurityGroupIngress"]);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
    });
});
