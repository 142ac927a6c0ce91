// The stack's EC2 resources alone, as a Pulumi program for scenario 18 of
// run.sh (lib/ec2-killed.sh): the real engine, the real dynamic providers,
// moto behind the fault proxy, and no host. Config (namespace e2e):
//   path        adopt | create
//   adopt:      groupId (hostguard:securityGroupId), instanceIds (a list: the hosts carrying it)
//   create:     hostguardGroupId (the created group's stand-in: the @pulumi/aws
//               plugin cannot be had here, so the test makes that group itself,
//               tagged as the stack's is), instanceId, vpcId
// The adopt path is components/securityGroup.ts itself; the create path
// registers the two resources that securityGroup.ts registers per host, with
// the same names and inputs. The region is AWS_REGION.
import * as pulumi from "@pulumi/pulumi";
import { InterfaceGroups, InterfaceRecord } from "../../../components/interfaceGroups";
import { ingressRules, SecurityGroup } from "../../../components/securityGroup";

const config = new pulumi.Config("e2e");
const region = process.env.AWS_REGION ?? "us-east-1";
const privateCidrs = ["10.0.0.0/8"];
const adminCidrs = ["203.0.113.0/24"];

if (config.require("path") === "adopt") {
    const attachTo = config.requireObject<string[]>("instanceIds").map((instanceId, i) => ({ name: `h18-${i}`, instanceId }));
    new SecurityGroup("hostguard", { region, vpcId: "", privateCidrs, adminCidrs, adoptId: config.require("groupId"), attachTo });
} else {
    const instanceId = config.require("instanceId");
    const hostguardGroupId = config.require("hostguardGroupId");
    const where = { region, instanceId };
    const record = new InterfaceRecord("h18-interface-record", { ...where, hostguardGroupId });
    new InterfaceGroups("h18-interface-groups", {
        ...where, vpcId: config.require("vpcId"), groups: [hostguardGroupId], ingress: ingressRules({ privateCidrs, adminCidrs }), originals: record.originals,
    });
}
