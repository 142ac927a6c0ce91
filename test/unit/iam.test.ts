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
import * as pulumi from "@pulumi/pulumi";
import { SECRET_KEYS, validateConfig, type RawConfig } from "../../components/config";
import { fleetNames, hostPolicy, SSM_AGENT_ACTIONS } from "../../components/ssmDocument";
import { buildStack } from "../../components/stack";

const ROOT = path.resolve(__dirname, "../..");
/** The stack's permissions boundary in the mocked program; docs/aws.md writes it with placeholders. */
const BOUNDARY_ARN = "arn:aws:iam::123456789012:policy/hostguard-boundary-PROJECT-STACK";
const DOC_BOUNDARY_ARN = "arn:aws:iam::ACCOUNT:policy/hostguard-boundary-PROJECT-STACK";
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
        assert.deepEqual(Object.keys(p).sort(), ["hostguard-adopt", "hostguard-create", "hostguard-fleet", "hostguard-fleet-boundary"]);
    });

    it("each path's policy holds every action that path calls, and nothing else", () => {
        assert.deepEqual([...actions(p["hostguard-adopt"])].sort(), [...code.read, ...code.adopt].sort());
        assert.deepEqual([...actions(p["hostguard-create"])].sort(), [...new Set([...code.read, ...code.create, ...CREATED_GROUP])].sort());
    });

    it("every change is scoped: the adopted group's ARN, the VPC for interfaces, the hostguard tag for the created group", () => {
        for (const policy of [p["hostguard-adopt"], p["hostguard-create"]]) {
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

// ---- delivery ssm: the fleet's deployer policy against the resources the program registers ----

/**
 * What @pulumi/aws calls for each resource type a fleet registers (create, read on every up and refresh, update,
 * delete; terraform-provider-aws's calls as IAM actions), and what the dynamic resources call. A type the
 * program registers without a row here fails the test: its calls must be looked up and put in the policy.
 */
const FLEET_PROVIDER_CALLS: Record<string, string[]> = {
    "aws:ec2/securityGroup:SecurityGroup": [...CREATED_GROUP, "ec2:DescribeNetworkInterfaces"],
    "aws:s3/bucket:Bucket": [
        "s3:CreateBucket", "s3:DeleteBucket", "s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketLocation", "s3:GetBucketAcl", "s3:GetBucketCORS",
        "s3:GetBucketWebsite", "s3:GetBucketVersioning", "s3:GetAccelerateConfiguration", "s3:GetBucketRequestPayment", "s3:GetBucketLogging",
        "s3:GetReplicationConfiguration", "s3:GetBucketObjectLockConfiguration", "s3:GetBucketTagging", "s3:GetBucketOwnershipControls",
        "s3:GetEncryptionConfiguration", "s3:GetBucketPolicy", "s3:GetLifecycleConfiguration",
        // forceDestroy: every object and version goes first.
        "s3:DeleteObject", "s3:DeleteObjectVersion",
    ],
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": ["s3:GetBucketPublicAccessBlock", "s3:PutBucketPublicAccessBlock"],
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": ["s3:GetEncryptionConfiguration", "s3:PutEncryptionConfiguration"],
    "aws:s3/bucketPolicy:BucketPolicy": ["s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy"],
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": ["s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration"],
    "aws:s3/bucketObjectv2:BucketObjectv2": ["s3:PutObject", "s3:GetObject", "s3:GetObjectTagging", "s3:DeleteObject", "s3:DeleteObjectVersion"],
    "aws:kms/key:Key": [
        "kms:CreateKey", "kms:TagResource", "kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:EnableKeyRotation",
        "kms:ListResourceTags", "kms:UpdateKeyDescription", "kms:ScheduleKeyDeletion",
    ],
    // A SecureString: SSM encrypts (put) and decrypts (read) with the stack's key on the caller's behalf.
    "aws:ssm/parameter:Parameter": [
        "ssm:PutParameter", "ssm:GetParameter", "ssm:GetParameters", "ssm:DescribeParameters", "ssm:DeleteParameter", "ssm:AddTagsToResource",
        "ssm:ListTagsForResource", "kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey",
    ],
    // The boundary is given at CreateRole, and put by PutRolePermissionsBoundary on a role created before it was set.
    // Not iam:UpdateAssumeRolePolicy: the trust is the constant EC2_TRUST, never changed, and that action cannot be tied
    // to the boundary (a changed trust would let another account assume the role): an up that changed it would be refused.
    "aws:iam/role:Role": [
        "iam:CreateRole", "iam:GetRole", "iam:UpdateRole", "iam:PutRolePermissionsBoundary", "iam:DeleteRole", "iam:TagRole", "iam:ListRolePolicies",
        "iam:ListAttachedRolePolicies", "iam:ListInstanceProfilesForRole",
    ],
    "aws:iam/rolePolicy:RolePolicy": ["iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"],
    // Adding a role to a profile passes the role.
    "aws:iam/instanceProfile:InstanceProfile": [
        "iam:CreateInstanceProfile", "iam:GetInstanceProfile", "iam:DeleteInstanceProfile", "iam:TagInstanceProfile", "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile", "iam:PassRole",
    ],
    "aws:iam/policy:Policy": [
        "iam:CreatePolicy", "iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion",
        "iam:DeletePolicy", "iam:TagPolicy",
    ],
    "aws:ssm/document:Document": [
        "ssm:CreateDocument", "ssm:GetDocument", "ssm:DescribeDocument", "ssm:UpdateDocument", "ssm:UpdateDocumentDefaultVersion", "ssm:DeleteDocument",
        "ssm:DescribeDocumentPermission", "ssm:ListTagsForResource", "ssm:AddTagsToResource",
    ],
    "aws:ssm/association:Association": ["ssm:CreateAssociation", "ssm:DescribeAssociation", "ssm:UpdateAssociation", "ssm:DeleteAssociation"],
    // components/fleetExposure.ts: the tagged instances, their interfaces' groups (hostExposure.ts openGroups);
    // components/fleetUninstall.ts: the tagged instances, one Run Command, its invocations.
    "pulumi-nodejs:dynamic:Resource": ["ec2:DescribeInstances", "ec2:DescribeSecurityGroups", "ssm:SendCommand", "ssm:GetCommandInvocation"],
};

/** The resources a fleet stack registers under Pulumi's mocks (project PROJECT, stack STACK). */
async function fleetResources(): Promise<Array<{ type: string; name: string; inputs: Record<string, any> }>> {
    const recorded: Array<{ type: string; name: string; inputs: Record<string, any> }> = [];
    await pulumi.runtime.setMocks({
        newResource(args) {
            recorded.push({ type: args.type, name: args.name, inputs: args.inputs });
            const physical = `${args.name}-abc1234`;
            return {
                id: physical,
                state: {
                    ...args.inputs, bucket: physical, arn: `arn:aws:${args.type.split(":")[1].split("/")[0]}:REGION:ACCOUNT:${physical}`, name: physical,
                    keyId: physical, version: 1, associationId: "a-1",
                },
            };
        },
        call(args) {
            throw new Error(`unexpected call ${args.token}`);
        },
    }, "PROJECT", "STACK", false);
    const raw: RawConfig = { delivery: "ssm", vpcId: "vpc-0123456789abcdef0", fleetPermissionsBoundary: BOUNDARY_ARN, webhookUrl: "https://hooks.example.test/services/T0/B0/x" };
    pulumi.runtime.setAllConfig({ ...Object.fromEntries(Object.entries(raw).map(([k, v]) => [`hostguard:${k}`, String(v)])), "aws:region": "eu-west-1" },
        ["hostguard:webhookUrl"]);
    const out = buildStack(validateConfig(raw, { secretKeys: SECRET_KEYS }));
    await new Promise((r) => pulumi.all([out.fleet!.associationId, out.fleet!.hostPolicyArn]).apply(r));
    await new Promise((r) => setTimeout(r, 200));
    return recorded.filter((r) => !r.type.startsWith("hostguard:"));
}

describe("the fleet's deployer policy (delivery ssm) against the program's resources", () => {
    const fleet = policies()["hostguard-fleet"];

    it("every resource type the program registers has its calls known, and the policy holds exactly their union", async () => {
        const types = [...new Set((await fleetResources()).map((r) => r.type))].sort();
        assert.deepEqual(types.filter((t) => !(t in FLEET_PROVIDER_CALLS)), [], "a registered type whose calls are not in FLEET_PROVIDER_CALLS");
        assert.deepEqual(Object.keys(FLEET_PROVIDER_CALLS).filter((t) => !types.includes(t)), [], "a row for a type the program no longer registers");
        assert.deepEqual([...actions(fleet)].sort(), [...new Set(types.flatMap((t) => FLEET_PROVIDER_CALLS[t]))].sort());
    });

    it("the dynamic resource's EC2 calls are the ones its code makes", () => {
        const code = fs.readFileSync(path.join(ROOT, "components/fleetExposure.ts"), "utf8");
        const commands = [...code.matchAll(/new sdk\.([A-Za-z]+)Command/g)].map((m) => `ec2:${m[1]}`);
        const exposure = fs.readFileSync(path.join(ROOT, "components/hostExposure.ts"), "utf8");
        assert.deepEqual(commands, ["ec2:DescribeInstances"]);
        const uninstall = fs.readFileSync(path.join(ROOT, "components/fleetUninstall.ts"), "utf8");
        assert.deepEqual([...uninstall.matchAll(/new ([A-Za-z]+)Command\(/g)].map((m) => `ssm:${m[1]}`), ["ssm:SendCommand", "ssm:GetCommandInvocation"]);
        assert.match(uninstall, /taggedInstances\(/);
        // openGroups reads each instance's interfaces (DescribeInstances) and each group's rules (DescribeSecurityGroups).
        assert.match(exposure, /ec2\.instanceInterfaces\(client, instanceId\)/);
        assert.match(exposure, /ec2\.findIngress\(client, groupId\)/);
        assert.match(CODE, /export async function instanceInterfaces[\s\S]*?command\("DescribeInstances"/);
        assert.match(CODE, /export async function findIngress[\s\S]*?describeIngress/);
    });

    it("every change is scoped: the names Pulumi gives the fleet's resources, the stack's parameter path, the key's and group's tag", async () => {
        const resources = await fleetResources();
        const named = (type: string) => resources.find((r) => r.type === type)!.name;
        const readOnly = new Set(["ec2:DescribeInstances", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSecurityGroups", "ssm:DescribeParameters", "ssm:GetCommandInvocation"]);
        for (const s of fleet.Statement.filter((x) => x.Effect === "Allow")) {
            const changes = list(s.Action).filter((a) => !readOnly.has(a));
            if (changes.length > 0 && list(s.Resource).includes("*")) {
                assert.equal(s.Condition?.StringEquals?.["aws:RequestTag/managed-by"], "hostguard", `${s.Sid}: ${changes.join(", ")} on * without the tag`);
            }
        }
        const resourceOf = (action: string) => fleet.Statement.filter((s) => s.Effect === "Allow" && list(s.Action).includes(action)).flatMap((s) => list(s.Resource));
        assert.deepEqual(resourceOf("s3:CreateBucket"), [`arn:aws:s3:::${named("aws:s3/bucket:Bucket")}-*`]);
        assert.deepEqual(resourceOf("s3:PutObject"), [`arn:aws:s3:::${named("aws:s3/bucket:Bucket")}-*/*`]);
        assert.deepEqual(resourceOf("ssm:PutParameter"), [`arn:aws:ssm:REGION:ACCOUNT:parameter${fleetNames("PROJECT", "STACK").parameterPrefix}*`]);
        assert.deepEqual(resourceOf("iam:PutRolePolicy"), [`arn:aws:iam::ACCOUNT:role/${named("aws:iam/role:Role")}-*`]);
        assert.deepEqual(resourceOf("iam:PassRole"), [`arn:aws:iam::ACCOUNT:role/${named("aws:iam/role:Role")}-*`]);
        const pass = fleet.Statement.filter((s) => list(s.Action).includes("iam:PassRole"));
        assert.deepEqual(pass.map((s) => [list(s.Action), s.Condition?.StringEquals?.["iam:PassedToService"]]), [[["iam:PassRole"], "ec2.amazonaws.com"]], "the host role goes to EC2 only");
        assert.deepEqual(resourceOf("iam:AddRoleToInstanceProfile"), [`arn:aws:iam::ACCOUNT:instance-profile/${named("aws:iam/instanceProfile:InstanceProfile")}-*`]);
        assert.deepEqual(resourceOf("iam:CreatePolicyVersion"), [`arn:aws:iam::ACCOUNT:policy/${named("aws:iam/policy:Policy")}-*`]);
        assert.ok(resourceOf("ssm:UpdateDocument").every((r) => r === `arn:aws:ssm:REGION:ACCOUNT:document/${named("aws:ssm/document:Document")}-*`));
        assert.ok(resourceOf("ssm:CreateAssociation").includes(`arn:aws:ssm:REGION:ACCOUNT:document/${named("aws:ssm/document:Document")}-*`));
        // The uninstall's command: AWS's shell document, on the instances carrying this stack's tag only.
        assert.deepEqual(resourceOf("ssm:SendCommand"), ["arn:aws:ssm:REGION::document/AWS-RunShellScript", "arn:aws:ec2:REGION:ACCOUNT:instance/*"]);
        const onInstances = fleet.Statement.find((s) => list(s.Resource).includes("arn:aws:ec2:REGION:ACCOUNT:instance/*") && list(s.Action).includes("ssm:SendCommand"))!;
        assert.equal(onInstances.Condition?.StringEquals?.["ssm:resourceTag/hostguard-stack"], fleetNames("PROJECT", "STACK").tagValue);
        const key = fleet.Statement.find((s) => list(s.Action).includes("kms:ScheduleKeyDeletion"))!;
        assert.equal(key.Condition?.StringEquals?.["aws:ResourceTag/managed-by"], "hostguard");
        // The key carries that tag from its creation.
        assert.deepEqual(resources.find((r) => r.type === "aws:kms/key:Key")!.inputs.tags, { "managed-by": "hostguard" });
    });
});

// ---- delivery ssm: the permissions boundary (the deployer is not an IAM administrator) ----

/**
 * The actions that give a role permissions or change its boundary, and so must carry the boundary condition when
 * allowed; each is one of those whose request context holds iam:PermissionsBoundary (AWS's Service Authorization
 * Reference, IAM: the boundary asked for at CreateRole and PutRolePermissionsBoundary, the role's own for the others).
 * An action outside this list in a statement with the condition would be refused by AWS (the key is absent).
 */
const BOUNDARY_KEYED = ["iam:CreateRole", "iam:PutRolePermissionsBoundary", "iam:PutRolePolicy", "iam:DeleteRolePolicy", "iam:AttachRolePolicy", "iam:DetachRolePolicy"];
/** Role changes that cannot be tied to the boundary and give or widen what a role may do or who may assume it: never allowed. */
const NEVER = ["iam:UpdateAssumeRolePolicy", "iam:DeleteRolePermissionsBoundary", "iam:SetDefaultPolicyVersion", "iam:CreatePolicyVersion"];

/** An IAM ARN pattern (`*` any run of characters) against one ARN. */
const globMatch = (pattern: string, arn: string): boolean =>
    new RegExp(`^${pattern.split("*").map((x) => x.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`).test(arn);

describe("the fleet's deployer policy and the permissions boundary (delivery ssm)", () => {
    const p = policies();
    const fleet = p["hostguard-fleet"];
    const boundary = p["hostguard-fleet-boundary"];
    const allows = fleet.Statement.filter((s) => s.Effect === "Allow");

    it("every allowed role-creating or role-changing action carries the boundary condition, and only such actions carry it", () => {
        const granting = allows.filter((s) => list(s.Action).some((a) => BOUNDARY_KEYED.includes(a)));
        assert.ok(granting.length > 0 && list(granting[0].Action).includes("iam:CreateRole"));
        for (const s of granting) {
            assert.deepEqual(s.Condition, { StringEquals: { "iam:PermissionsBoundary": DOC_BOUNDARY_ARN } }, s.Sid);
            assert.deepEqual(list(s.Action).filter((a) => !BOUNDARY_KEYED.includes(a)), [], `${s.Sid}: an action whose context has no iam:PermissionsBoundary`);
        }
        for (const a of NEVER.filter((x) => x !== "iam:CreatePolicyVersion")) {
            assert.ok(!actions(fleet).has(a), `${a} is allowed`);
        }
        // The program's calls with a boundary: the role row of FLEET_PROVIDER_CALLS has no UpdateAssumeRolePolicy.
        assert.ok(!FLEET_PROVIDER_CALLS["aws:iam/role:Role"].includes("iam:UpdateAssumeRolePolicy"));
    });

    it("new policy versions only of the program's own grants policy; the boundary cannot be edited, removed or swapped", () => {
        const versions = allows.filter((s) => list(s.Action).includes("iam:CreatePolicyVersion"));
        assert.deepEqual(versions.flatMap((s) => list(s.Resource)), ["arn:aws:iam::ACCOUNT:policy/hostguard-fleet-host-grants-*"]);
        assert.ok(!globMatch("arn:aws:iam::ACCOUNT:policy/hostguard-fleet-host-grants-*", DOC_BOUNDARY_ARN));
        const denies = fleet.Statement.filter((s) => s.Effect === "Deny");
        const denied = (action: string, resource: string) => denies.filter((s) => list(s.Action).includes(action) && list(s.Resource).some((r) => globMatch(r, resource)));
        assert.equal(denied("iam:DeleteRolePermissionsBoundary", "arn:aws:iam::ACCOUNT:role/anything").length, 1);
        assert.deepEqual(denied("iam:PutRolePermissionsBoundary", "arn:aws:iam::ACCOUNT:role/anything").map((s) => s.Condition),
            [{ StringNotEquals: { "iam:PermissionsBoundary": DOC_BOUNDARY_ARN } }]);
        for (const a of ["iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:SetDefaultPolicyVersion", "iam:DeletePolicy"]) {
            assert.ok(denied(a, DOC_BOUNDARY_ARN).some((s) => s.Condition === undefined), `${a} on the boundary is not denied`);
        }
    });

    it("the role the program creates carries the stack's boundary", async () => {
        const role = (await fleetResources()).find((r) => r.type === "aws:iam/role:Role")!;
        assert.equal(role.inputs.permissionsBoundary, BOUNDARY_ARN);
    });

    it("the boundary allows every action of the host policy on its resources, with the same conditions (the host role still works)", async () => {
        const resources = await fleetResources();
        const inline = JSON.parse(resources.find((r) => r.type === "aws:iam/rolePolicy:RolePolicy")!.inputs.policy) as Policy;
        // The ARNs as AWS gives them to this stack: Pulumi's bucket name, the stack's parameter path, a key of the account.
        const bucket = `${resources.find((r) => r.type === "aws:s3/bucket:Bucket")!.name}-abc1234`;
        const real = hostPolicy(`arn:aws:s3:::${bucket}`, `arn:aws:ssm:REGION:ACCOUNT:parameter${fleetNames("PROJECT", "STACK").webhookParameter}`,
            "arn:aws:kms:REGION:ACCOUNT:key/1234abcd-12ab-34cd-56ef-1234567890ab");
        const host = JSON.parse(real) as Policy;
        assert.deepEqual(host.Statement.map((s) => [s.Sid, s.Action]), inline.Statement.map((s) => [s.Sid, s.Action]), "the mocked program's inline policy");
        let checked = 0;
        for (const s of host.Statement) {
            for (const action of list(s.Action)) {
                for (const resource of list(s.Resource)) {
                    const by = boundary.Statement.filter((b) => b.Effect === "Allow" && list(b.Action).includes(action) && list(b.Resource).some((r) => globMatch(r, resource)));
                    assert.ok(by.length > 0, `the boundary does not allow ${action} on ${resource}`);
                    assert.ok(by.some((b) => JSON.stringify(b.Condition ?? null) === JSON.stringify(s.Condition ?? null)), `${action}: the boundary's condition differs`);
                    checked += 1;
                }
            }
        }
        assert.equal(checked, SSM_AGENT_ACTIONS.length + 4);
        // And nothing more: every boundary action is one the host policy has.
        assert.deepEqual([...actions(boundary)].sort(), [...new Set(host.Statement.flatMap((s) => list(s.Action)))].sort());
        // The control: another stack's parameter and a bucket of another name are outside the boundary.
        const param = boundary.Statement.find((b) => list(b.Action).includes("ssm:GetParameter"))!;
        assert.ok(!globMatch(String(param.Resource), "arn:aws:ssm:REGION:ACCOUNT:parameter/hostguard/PROJECT/other/webhook"));
        const read = boundary.Statement.find((b) => list(b.Action).includes("s3:GetObject"))!;
        assert.ok(!globMatch(String(read.Resource), "arn:aws:s3:::somebody-else/bundles/x.tar"));
    });
});
