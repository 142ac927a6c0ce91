// docs/aws.md's IAM policies (issue 33, item 5) against the EC2 actions the
// code calls: every action of the dynamic resources (read from
// components/ec2Reconcile.ts, where every EC2 command is named) is in the
// policy of each path that calls it, the created group's actions as
// @pulumi/aws calls them, and every change is scoped (no `*` resource, the
// adopted group's ARN, the VPC condition, the created group's tag).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

const ROOT = path.resolve(__dirname, "../..");
const README = fs.readFileSync(path.join(ROOT, "docs/aws.md"), "utf8");
const CODE = fs.readFileSync(path.join(ROOT, "components/ec2Reconcile.ts"), "utf8");

interface Statement { Sid: string; Effect: string; Action: string | string[]; Resource: string | string[]; Condition?: Record<string, Record<string, string>> }
interface Policy { Id: string; Statement: Statement[] }

function policies(): Record<string, Policy> {
    const blocks = [...README.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]) as Policy).filter((p) => p.Id?.startsWith("hostguard-"));
    return Object.fromEntries(blocks.map((p) => [p.Id, p]));
}

const list = (v: string | string[]) => (Array.isArray(v) ? v : [v]);
const actions = (p: Policy) => new Set(p.Statement.filter((s) => s.Effect === "Allow").flatMap((s) => list(s.Action)));

/** Every EC2 action the dynamic resources call: `command("X", ...)` and the reconcile's step names. */
function codeActions(): { read: string[]; adopt: string[]; create: string[] } {
    const commands = [...CODE.matchAll(/command\("([A-Za-z]+)"/g)].map((m) => m[1]);
    const steps = [...CODE.matchAll(/(?:describe|authorize|revoke): "([A-Za-z]+)"/g)].map((m) => m[1]);
    const all = [...new Set([...commands, ...steps])].map((a) => `ec2:${a}`);
    return {
        read: all.filter((a) => a.startsWith("ec2:Describe")),
        adopt: all.filter((a) => /SecurityGroup(Rule\w*)?Ingress$/.test(a)),
        create: all.filter((a) => a === "ec2:ModifyNetworkInterfaceAttribute"),
    };
}

/** What @pulumi/aws's aws.ec2.SecurityGroup calls for the created group (create, tag, rules changed later, delete). */
const CREATED_GROUP = ["ec2:CreateSecurityGroup", "ec2:CreateTags", "ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress",
    "ec2:AuthorizeSecurityGroupEgress", "ec2:RevokeSecurityGroupEgress", "ec2:DeleteSecurityGroup", "ec2:DescribeSecurityGroups"];

describe("the README's IAM policies against the code's EC2 calls", () => {
    const code = codeActions();
    const p = policies();

    it("finds the code's actions (the extraction itself works)", () => {
        assert.deepEqual(code.read.sort(), ["ec2:DescribeInstances", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSecurityGroups"]);
        assert.deepEqual(code.adopt.sort(), ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:UpdateSecurityGroupRuleDescriptionsIngress"]);
        assert.deepEqual(code.create, ["ec2:ModifyNetworkInterfaceAttribute"]);
        assert.deepEqual(Object.keys(p).sort(), ["hostguard-adopt", "hostguard-create"]);
    });

    it("each path's policy holds every action that path calls, and nothing else", () => {
        assert.deepEqual([...actions(p["hostguard-adopt"])].sort(), [...code.read, ...code.adopt].sort());
        assert.deepEqual([...actions(p["hostguard-create"])].sort(), [...new Set([...code.read, ...code.create, ...CREATED_GROUP])].sort());
    });

    it("every change is scoped: the adopted group's ARN, the VPC for interfaces, the hostguard tag for the created group", () => {
        for (const policy of Object.values(p)) {
            for (const s of policy.Statement) {
                const changes = list(s.Action).filter((a) => !a.startsWith("ec2:Describe"));
                if (changes.length > 0) {
                    assert.ok(!list(s.Resource).includes("*"), `${policy.Id} ${s.Sid}: ${changes.join(", ")} on *`);
                }
            }
        }
        const adopt = p["hostguard-adopt"].Statement.find((s) => list(s.Action).includes("ec2:RevokeSecurityGroupIngress"))!;
        assert.match(String(adopt.Resource), /^arn:aws:ec2:REGION:ACCOUNT:security-group\/sg-[0-9a-f]+$/);
        const create = p["hostguard-create"].Statement;
        const modify = create.find((s) => list(s.Action).includes("ec2:ModifyNetworkInterfaceAttribute"))!;
        assert.match(JSON.stringify(modify.Condition), /"ec2:Vpc":"arn:aws:ec2:REGION:ACCOUNT:vpc\/vpc-/);
        for (const a of ["ec2:RevokeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupIngress", "ec2:DeleteSecurityGroup"]) {
            const s = create.find((x) => list(x.Action).includes(a))!;
            assert.equal(s.Condition?.StringEquals?.["aws:ResourceTag/managed-by"], "hostguard", a);
        }
        assert.ok(create.some((s) => list(s.Action).includes("ec2:CreateSecurityGroup") && s.Condition?.StringEquals?.["aws:RequestTag/managed-by"] === "hostguard"));
    });
});
