// delivery ssm against moto's EC2: the whole-host check of a fleet (components/fleetExposure.ts).
// Instances launched with the fleet's group (the created group's rules) and the
// stack's tag pass preview's check; a second group opening 22 to the world on
// one tagged instance stops it, naming instance and group; the same group on an
// untagged instance, or on an instance of another project's stack of the same
// name, is not the fleet's. The provider is called the way the engine calls it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CreateTagsCommand } from "@aws-sdk/client-ec2";
import { permissionsOf, wantedAtoms } from "../../components/ec2Reconcile";
import { FLEET_EXPOSURE_KIND, fleetExposureProvider, type FleetExposureState } from "../../components/fleetExposure";
import { FLEET_TAG, fleetNames } from "../../components/ssmDocument";
import { RULES } from "./engine";
import { motoAccount } from "./harness";
import { REGION } from "./moto";

const p = fleetExposureProvider as Required<typeof fleetExposureProvider>;
const SSH_ANYWHERE = [{ IpProtocol: "tcp", FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: "0.0.0.0/0", Description: "ssh from anywhere" }] }];

const aws = motoAccount();

function inputs(tagValue: string): FleetExposureState {
    return { kind: FLEET_EXPOSURE_KIND, region: REGION, tagKey: FLEET_TAG, tagValue, ingress: RULES };
}

async function launch(groups: string[], tagValue?: string): Promise<string> {
    const { instanceId } = await aws.account.instance(groups);
    if (tagValue !== undefined) {
        await aws.account.client.send(new CreateTagsCommand({ Resources: [instanceId], Tags: [{ Key: FLEET_TAG, Value: tagValue }] }));
    }
    return instanceId;
}

describe("a fleet's whole-host check (delivery ssm)", () => {
    it("instances launched with the fleet's group pass; a second group opening 22 to the world on one of them stops preview, naming both", async () => {
        const tag = fleetNames("shop", "prod").tagValue;
        const fleetGroup = await aws.account.group(permissionsOf(wantedAtoms(RULES)), "fleet");
        const a = await launch([fleetGroup], tag);
        const b = await launch([fleetGroup], tag);
        const ssh = await aws.account.group(SSH_ANYWHERE, "ssh-anywhere");
        // Not the fleet's: untagged, and another project's stack named prod.
        await launch([fleetGroup, ssh]);
        await launch([fleetGroup, ssh], fleetNames("blog", "prod").tagValue);

        const ok = await p.check(inputs(tag), inputs(tag));
        assert.deepEqual(ok.failures, []);
        assert.deepEqual(ok.inputs.worldReachable, { [a]: ["tcp 443"], [b]: ["tcp 443"] }, "the tagged instances only, each open on 443 alone");

        const c = await launch([fleetGroup, ssh], tag);
        const refused = await p.check(inputs(tag), inputs(tag));
        assert.equal(refused.failures!.length, 1);
        const reason = refused.failures![0].reason;
        assert.match(reason, new RegExp(`group ${ssh} on interface eni-[0-9a-f]+ of instance ${c} lets in tcp 22 from 0\\.0\\.0\\.0/0 \\("ssh from anywhere"\\)`));
        assert.match(reason, /reachable from anywhere on tcp 443, tcp 22/);
        assert.match(reason, /An instance of the fleet \(tag hostguard-stack=shop\/prod\) carries every group of its launch template/);
        assert.ok(!reason.includes(a) && !reason.includes(b), "only the instance that carries the group is named");
        assert.deepEqual(Object.keys(refused.inputs.worldReachable!).sort(), [a, b, c].sort());
    });

    it("no tagged instance yet (a new fleet): nothing to refuse", async () => {
        const tag = fleetNames("empty", "prod").tagValue;
        const out = await p.check(inputs(tag), inputs(tag));
        assert.deepEqual([out.failures, out.inputs.worldReachable], [[], {}]);
    });
});
