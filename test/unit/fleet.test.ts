// hostguard:delivery ssm under pulumi.runtime.setMocks: the resource graph of
// a fleet, the SSM document as registered, the association's parameters
// (names and hashes only: the webhook is a sentinel that must appear nowhere
// but in the SecureString's secret value) and the hosts' grants (only this
// stack's bucket prefixes and parameters). The same calls against moto:
// test/aws/fleet.test.ts.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { ConfigError, configWarnings, placeholderLines, SECRET_KEYS, validateConfig, type RawConfig } from "../../components/config";
import { renderFleet, stackConfig } from "../../tools/render";
import { sha256, type PayloadFile } from "../../components/bundles";
import { DOCUMENT_PARAMETERS, fleetNames, SSM_AGENT_ACTIONS, STEP_SOURCE } from "../../components/ssmDocument";
import { buildStack, refuseFleetAwsSettings, type StackOutputs } from "../../components/stack";

const SENTINEL = "https://hooks.example.test/services/T0/B0/SENTINEL-fleet-77";
const SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d";
const BUCKET = "hostguard-fleet-bundles-0a1b2c3";

interface Recorded { type: string; name: string; inputs: Record<string, any> }
let recorded: Recorded[] = [];

const OUTPUTS: Record<string, (name: string, inputs: Record<string, any>) => Record<string, unknown>> = {
    "aws:s3/bucket:Bucket": () => ({ bucket: BUCKET, arn: `arn:aws:s3:::${BUCKET}` }),
    "aws:kms/key:Key": () => ({ arn: "arn:aws:kms:eu-west-1:123456789012:key/k-1", keyId: "k-1" }),
    "aws:ssm/parameter:Parameter": (_name, inputs) => ({ version: 1, arn: `arn:aws:ssm:eu-west-1:123456789012:parameter${inputs.name}` }),
    "aws:iam/role:Role": (name) => ({ name: `${name}-r`, arn: `arn:aws:iam::123456789012:role/${name}-r` }),
    "aws:iam/instanceProfile:InstanceProfile": (name) => ({ name: `${name}-p` }),
    "aws:iam/policy:Policy": (name) => ({ arn: `arn:aws:iam::123456789012:policy/${name}` }),
    "aws:ssm/document:Document": (name) => ({ name: `${name}-doc` }),
    "aws:ssm/association:Association": () => ({ associationId: "assoc-1" }),
};

const MOCKS: pulumi.runtime.Mocks = {
    newResource(args) {
        recorded.push({ type: args.type, name: args.name, inputs: args.inputs });
        const id = args.type === "aws:ec2/securityGroup:SecurityGroup" ? "sg-0mock0000000000001" : `${args.name}-id`;
        return { id, state: { ...args.inputs, ...(OUTPUTS[args.type]?.(args.name, args.inputs) ?? {}) } };
    },
    call(args) {
        throw new Error(`unexpected call ${args.token}`);
    },
};

before(async () => {
    await pulumi.runtime.setMocks(MOCKS, "hostguard", "test", false);
});

function payload(): PayloadFile[] {
    const f = (path: string, text: string, mode: 0o755 | 0o644 = 0o644): PayloadFile => ({ path, mode, content: Buffer.from(text), sha256: sha256(text) });
    const table = [
        "base install /usr/local/lib/hostguard/install 0755", "base files.table /usr/local/lib/hostguard/files.table 0644",
        "base hostguard.conf /etc/hostguard/hostguard.conf 0644", "monitors host-monitor /usr/local/lib/hostguard/host-monitor 0755",
        "monitors cron.d/hostguard /etc/cron.d/hostguard 0644",
        "bantool fail2ban/jail.d/hostguard-nginx-bad-request.local /etc/fail2ban/jail.d/hostguard-nginx-bad-request.local 0644",
        "web nginx/hostguard-deny.conf /etc/nginx/snippets/hostguard-deny.conf 0644", "",
    ].join("\n");
    return [f("install", "#!/bin/sh\n", 0o755), f("files.table", table), f("host-monitor", "#!/bin/sh\n", 0o755), f("nginx/hostguard-deny.conf", "x\n")];
}

const BOUNDARY = "arn:aws:iam::123456789012:policy/hostguard-boundary-hostguard-test";
const FLEET: RawConfig = { delivery: "ssm", vpcId: "vpc-0123456789abcdef0", fleetPermissionsBoundary: BOUNDARY, webhookUrl: SENTINEL };

async function build(raw: RawConfig, aws: Record<string, string> = { region: "eu-west-1" }): Promise<{ out: StackOutputs; resources: Recorded[] }> {
    recorded = [];
    pulumi.runtime.setAllConfig({
        ...Object.fromEntries(Object.entries(raw).map(([k, v]) => [`hostguard:${k}`, String(v)])),
        ...Object.fromEntries(Object.entries(aws).map(([k, v]) => [`aws:${k}`, v])),
    }, ["hostguard:webhookUrl"]);
    const out = buildStack(validateConfig(raw, { secretKeys: SECRET_KEYS }), payload());
    if (out.fleet) {
        await new Promise((r) => pulumi.all([out.fleet!.associationId, out.fleet!.hostPolicyArn]).apply(r));
    }
    await new Promise((r) => setTimeout(r, 100));
    return { out, resources: [...recorded].sort((a, b) => (`${a.type} ${a.name}` < `${b.type} ${b.name}` ? -1 : 1)) };
}

const one = (resources: Recorded[], type: string): Recorded => {
    const found = resources.filter((r) => r.type === type);
    assert.equal(found.length, 1, type);
    return found[0];
};
const plain = (v: any): any => (v && typeof v === "object" && SECRET_SIG_KEY in v ? v.value : v);

describe("delivery ssm: the fleet's resources", () => {
    it("registers the security group and exactly the fleet's resources, no remote command", async () => {
        const { resources, out } = await build(FLEET);
        assert.deepEqual(resources.map((r) => `${r.type} ${r.name}`), [
            "aws:ec2/securityGroup:SecurityGroup hostguard-sg",
            "aws:iam/instanceProfile:InstanceProfile hostguard-fleet-host",
            "aws:iam/policy:Policy hostguard-fleet-host-grants",
            "aws:iam/role:Role hostguard-fleet-host",
            "aws:iam/rolePolicy:RolePolicy hostguard-fleet-host",
            "aws:kms/key:Key hostguard-fleet-webhook",
            "aws:s3/bucket:Bucket hostguard-fleet-bundles",
            "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration hostguard-fleet-bundles",
            "aws:s3/bucketObjectv2:BucketObjectv2 hostguard-fleet-bundle-bantool",
            "aws:s3/bucketObjectv2:BucketObjectv2 hostguard-fleet-bundle-base",
            "aws:s3/bucketObjectv2:BucketObjectv2 hostguard-fleet-bundle-monitors",
            "aws:s3/bucketObjectv2:BucketObjectv2 hostguard-fleet-bundle-web",
            "aws:s3/bucketPolicy:BucketPolicy hostguard-fleet-bundles",
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock hostguard-fleet-bundles",
            "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration hostguard-fleet-bundles",
            "aws:ssm/association:Association hostguard-fleet-apply",
            "aws:ssm/document:Document hostguard-fleet-apply",
            "aws:ssm/parameter:Parameter hostguard-fleet-webhook",
            "hostguard:aws:SecurityGroup hostguard",
            "hostguard:fleet:FleetDelivery hostguard-fleet",
            "pulumi-nodejs:dynamic:Resource hostguard-fleet-exposure",
            "pulumi-nodejs:dynamic:Resource hostguard-fleet-uninstall",
        ]);
        // The whole-host check of the instances carrying the tag: read-only, on the created group's rules.
        const exposure = resources.find((r) => r.name === "hostguard-fleet-exposure")!.inputs;
        assert.deepEqual([exposure.kind, exposure.region, exposure.tagKey, exposure.tagValue], ["hostguard:fleet-exposure", "eu-west-1", "hostguard-stack", "hostguard/test"]);
        assert.deepEqual(exposure.ingress.map((r: any) => `${r.fromPort} ${r.cidrBlocks.join(",")}`), ["443 0.0.0.0/0", "8080 10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"]);
        assert.deepEqual(out.hosts, {});
        assert.equal(out.fleet!.targetTag, "hostguard-stack=hostguard/test");
        assert.ok(out.securityGroupId, "the group is exported for the launch template");
        const block = one(resources, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs;
        assert.deepEqual([block.blockPublicAcls, block.blockPublicPolicy, block.ignorePublicAcls, block.restrictPublicBuckets], [true, true, true, true]);
        assert.equal(one(resources, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration").inputs.rules[0].applyServerSideEncryptionByDefault.sseAlgorithm, "AES256");
        assert.ok(!resources.some((r) => r.type.includes("Versioning")), "no versioning: a replaced bundle is really gone");
        assert.ok(!resources.some((r) => r.type.includes("rolePolicyAttachment")), "no managed policy: the role holds the stack's grants only");
    });

    it("the bucket refuses plain HTTP to everyone, and its runs/ expire after fleetRunsExpireDays (default 30)", async () => {
        const { resources } = await build(FLEET);
        const policy = JSON.parse(one(resources, "aws:s3/bucketPolicy:BucketPolicy").inputs.policy);
        assert.deepEqual(policy.Statement, [{
            Sid: "RefusePlainHttp", Effect: "Deny", Principal: "*", Action: "s3:*", Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`],
            Condition: { Bool: { "aws:SecureTransport": "false" } },
        }]);
        const rules = one(resources, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs.rules;
        assert.deepEqual(rules, [{
            id: "hostguard-runs-expire", status: "Enabled", filter: { prefix: "runs/" }, expiration: { days: 30 }, abortIncompleteMultipartUpload: { daysAfterInitiation: 1 },
        }]);
        assert.equal(one(resources, "aws:ssm/association:Association").inputs.outputLocation.s3KeyPrefix, "runs/", "the rule's prefix is the outputs'");
        const set = await build({ ...FLEET, fleetRunsExpireDays: "7" });
        assert.equal(one(set.resources, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs.rules[0].expiration.days, 7);
    });

    it("bundle objects are content-addressed: bundles/<part>/<sha256 of the tar>.tar, with S3's SHA-256 checksum", async () => {
        const { resources } = await build(FLEET);
        const objects = resources.filter((r) => r.type === "aws:s3/bucketObjectv2:BucketObjectv2");
        for (const o of objects) {
            const tar = Buffer.from(o.inputs.contentBase64, "base64");
            assert.equal(o.inputs.key, `bundles/${o.name.replace("hostguard-fleet-bundle-", "")}/${sha256(tar)}.tar`);
            assert.equal(o.inputs.checksumAlgorithm, "SHA256");
            assert.ok(!tar.toString("latin1").includes("SENTINEL"));
        }
        assert.equal(new Set(objects.map((o) => o.inputs.key)).size, 4);
    });

    it("the document: one aws:runShellScript step carrying ssmstep.py, four parameters each with an allowedPattern", async () => {
        const { resources } = await build(FLEET);
        const doc = one(resources, "aws:ssm/document:Document").inputs;
        assert.equal(doc.documentType, "Command");
        const content = JSON.parse(doc.content);
        assert.equal(content.schemaVersion, "2.2");
        assert.deepEqual(Object.keys(content.parameters), ["Bucket", "Bundles", "WebhookParameter", "WebhookVersion"]);
        for (const [k, p] of Object.entries(content.parameters) as Array<[string, any]>) {
            assert.equal(p.type, "String");
            assert.equal(p.allowedPattern, DOCUMENT_PARAMETERS[k as keyof typeof DOCUMENT_PARAMETERS].allowedPattern);
            assert.ok(!new RegExp(p.allowedPattern).test("x' ; rm -rf / ; '"), `${k} refuses a quote`);
        }
        assert.equal(content.mainSteps.length, 1);
        const step = content.mainSteps[0];
        assert.equal(step.action, "aws:runShellScript");
        const lines: string[] = step.inputs.runCommand;
        assert.equal(lines[2], "exec /usr/bin/python3 -I - '{{ Bucket }}' '{{ Bundles }}' '{{ WebhookParameter }}' '{{ WebhookVersion }}' <<'HOSTGUARD_STEP'");
        assert.equal(lines.slice(3, -1).join("\n") + "\n", fs.readFileSync(STEP_SOURCE, "utf8"), "the step's text, byte for byte");
        assert.equal(lines.at(-1), "HOSTGUARD_STEP");
        assert.ok(doc.content.length < 64 * 1024, "under SSM's 64 KB document limit");
    });

    it("the association: tag target, schedule and rate control from config, outputs under runs/, parameters without a secret", async () => {
        const { resources } = await build({ ...FLEET, fleetSchedule: "rate(1 hours)", fleetMaxConcurrency: "25%", fleetMaxErrors: "2" });
        const a = one(resources, "aws:ssm/association:Association").inputs;
        assert.deepEqual(a.targets, [{ key: "tag:hostguard-stack", values: ["hostguard/test"] }]);
        assert.equal(a.associationName, "hostguard-hostguard-test");
        assert.deepEqual([a.scheduleExpression, a.maxConcurrency, a.maxErrors], ["rate(1 hours)", "25%", "2"]);
        assert.deepEqual(a.outputLocation, { s3BucketName: BUCKET, s3KeyPrefix: "runs/" });
        assert.equal(a.name, "hostguard-fleet-apply-doc");
        const shas = resources.filter((r) => r.type === "aws:s3/bucketObjectv2:BucketObjectv2")
            .map((o) => [o.name.replace("hostguard-fleet-bundle-", ""), sha256(Buffer.from(o.inputs.contentBase64, "base64"))]);
        const want = ["base", "monitors", "bantool", "web"].map((p) => `${p}:${shas.find(([q]) => q === p)![1]}`).join(" ");
        assert.deepEqual(a.parameters, { Bucket: BUCKET, Bundles: want, WebhookParameter: "/hostguard/hostguard/test/webhook", WebhookVersion: "1" });
        for (const [k, v] of Object.entries(a.parameters) as Array<[keyof typeof DOCUMENT_PARAMETERS, string]>) {
            assert.match(v, new RegExp(DOCUMENT_PARAMETERS[k].allowedPattern), k);
        }
        for (const r of resources) {
            const inputs = { ...r.inputs };
            if (r.type === "aws:ssm/parameter:Parameter") {
                assert.ok(SECRET_SIG_KEY in inputs.value, "the parameter's value is a secret");
                assert.equal(plain(inputs.value), `url=${SENTINEL}\n`);
                delete inputs.value;
            }
            assert.ok(!JSON.stringify(inputs).includes("SENTINEL"), `${r.type} ${r.name} carries the webhook`);
        }
    });

    it("the parameter is a SecureString under /hostguard/<stack>/ with the stack's own key", async () => {
        const { resources } = await build(FLEET);
        const p = one(resources, "aws:ssm/parameter:Parameter").inputs;
        assert.deepEqual([p.name, p.type, p.keyId], ["/hostguard/hostguard/test/webhook", "SecureString", "arn:aws:kms:eu-west-1:123456789012:key/k-1"]);
    });

    it("the hosts' grants: the agent's own calls, this stack's bucket prefixes and parameter; decrypt only via SSM; the same as a policy", async () => {
        const { resources } = await build(FLEET);
        const inline = JSON.parse(one(resources, "aws:iam/rolePolicy:RolePolicy").inputs.policy);
        assert.equal(JSON.stringify(inline), JSON.stringify(JSON.parse(one(resources, "aws:iam/policy:Policy").inputs.policy)));
        assert.deepEqual(inline.Statement.map((s: any) => [s.Effect, s.Action, s.Resource]), [
            ["Allow", [...SSM_AGENT_ACTIONS], "*"],
            ["Allow", "s3:GetObject", `arn:aws:s3:::${BUCKET}/bundles/*`],
            ["Allow", "s3:PutObject", `arn:aws:s3:::${BUCKET}/runs/*`],
            ["Allow", "ssm:GetParameter", "arn:aws:ssm:eu-west-1:123456789012:parameter/hostguard/hostguard/test/webhook"],
            ["Allow", "kms:Decrypt", "arn:aws:kms:eu-west-1:123456789012:key/k-1"],
        ]);
        // Nothing on `*` reads data: no parameter read, no S3, no KMS.
        assert.ok(SSM_AGENT_ACTIONS.every((a) => !/^ssm:GetParameters?$|^s3:|^kms:/.test(a)), SSM_AGENT_ACTIONS.join(" "));
        assert.deepEqual(inline.Statement[4].Condition, { StringLike: { "kms:ViaService": "ssm.*.amazonaws.com" } });
        assert.deepEqual(JSON.parse(one(resources, "aws:iam/role:Role").inputs.assumeRolePolicy).Statement[0].Principal, { Service: "ec2.amazonaws.com" });
        // The role is created under the stack's permissions boundary (the deployer may create roles only with it: docs/aws.md).
        assert.equal(one(resources, "aws:iam/role:Role").inputs.permissionsBoundary, BOUNDARY);
    });
});

describe("delivery ssm: destroy uninstalls the fleet", () => {
    it("the uninstall resource: the tag, the region, a bounded wait; after the association, before what it needs or names", async () => {
        const { resources } = await build(FLEET);
        const u = resources.find((r) => r.name === "hostguard-fleet-uninstall")!.inputs;
        assert.deepEqual([u.kind, u.region, u.tagKey, u.tagValue, u.waitSeconds], ["hostguard:fleet-uninstall", "eu-west-1", "hostguard-stack", "hostguard/test", 300]);
        // Pulumi's mocks do not report dependsOn: the order is read from the wiring itself.
        const src = fs.readFileSync(path.join(__dirname, "../../components/fleet.ts"), "utf8");
        assert.match(src, /new FleetUninstall\([^;]*dependsOn: \[document, parameter, key, role, rolePolicy, profile, \.\.\.objects/);
        assert.match(src, /new aws\.ssm\.Association\([\s\S]*?dependsOn: \[uninstall,/);
    });
});

describe("delivery ssm: names derived from project and stack", () => {
    it("two projects with a stack of the same name share no name: tag value, parameter path, association", () => {
        const a = fleetNames("shop", "prod");
        const b = fleetNames("blog", "prod");
        assert.deepEqual(a, {
            tagValue: "shop/prod", parameterPrefix: "/hostguard/shop/prod/", webhookParameter: "/hostguard/shop/prod/webhook", associationName: "hostguard-shop-prod",
        });
        for (const k of Object.keys(a) as Array<keyof typeof a>) {
            assert.notEqual(a[k], b[k], k);
        }
        // `/` cannot be in either name, so the tag value and the path are one-to-one even where a hyphen joins them.
        assert.notEqual(fleetNames("a-b", "c").tagValue, fleetNames("a", "b-c").tagValue);
    });
    it("a dotted stack (and every character Pulumi allows) is carried by every name and pattern", () => {
        const n = fleetNames("my_proj.v2", "prod.eu-west-1_a");
        assert.equal(n.tagValue, "my_proj.v2/prod.eu-west-1_a");
        assert.match(n.webhookParameter, new RegExp(DOCUMENT_PARAMETERS.WebhookParameter.allowedPattern));
        assert.match(n.associationName, /^[a-zA-Z0-9_.-]{3,128}$/, "CreateAssociation's AssociationName pattern");
        assert.match(n.webhookParameter, /^[a-zA-Z0-9_./-]+$/, "PutParameter's name characters");
        assert.match(n.tagValue, /^[\p{L}\p{Z}\p{N}_.:/=+\-@]{0,256}$/u, "an EC2 tag value");
        const long = fleetNames("p".repeat(58), "s".repeat(59));
        assert.equal(long.associationName.length, 128);
    });
    it("a name no resource can carry is refused with the reason, naming the fix", () => {
        assert.throws(() => fleetNames("p".repeat(60), "s".repeat(58)), /would be 129 characters, State Manager allows 128: shorten the project name \(60\) or the stack name \(58\) to 117 together/);
        assert.throws(() => fleetNames("shop", "a/b"), /the stack name "a\/b" cannot name a fleet's resources/);
    });
    it("the program with a dotted stack: the names carry the period, and no KMS alias (it would refuse one)", async () => {
        await pulumi.runtime.setMocks(MOCKS, "hostguard", "prod.eu", false);
        try {
            const { resources, out } = await build(FLEET);
            assert.equal(out.fleet!.targetTag, "hostguard-stack=hostguard/prod.eu");
            assert.equal(one(resources, "aws:ssm/parameter:Parameter").inputs.name, "/hostguard/hostguard/prod.eu/webhook");
            assert.ok(!resources.some((r) => r.type === "aws:kms/alias:Alias"));
        } finally {
            await pulumi.runtime.setMocks(MOCKS, "hostguard", "test", false);
        }
    });
    it("a stack whose names cannot be carried is refused before any resource is registered", async () => {
        await pulumi.runtime.setMocks(MOCKS, "p".repeat(100), "s".repeat(100), false);
        try {
            recorded = [];
            pulumi.runtime.setAllConfig({
                ...Object.fromEntries(Object.entries(FLEET).map(([k, v]) => [`hostguard:${k}`, String(v)])), "aws:region": "eu-west-1",
            }, ["hostguard:webhookUrl"]);
            assert.throws(() => buildStack(validateConfig(FLEET, { secretKeys: SECRET_KEYS }), payload()), /State Manager allows 128/);
            await new Promise((r) => setTimeout(r, 50));
            assert.deepEqual(recorded, []);
        } finally {
            await pulumi.runtime.setMocks(MOCKS, "hostguard", "test", false);
        }
    });
});

describe("delivery ssm: aws:* settings that change the endpoint", () => {
    it("aws:useFipsEndpoint and aws:endpoints are refused, naming them, before any resource; false is no setting", async () => {
        for (const [key, value, why] of [
            ["useFipsEndpoint", "true", /^aws:useFipsEndpoint is set, but the fleet's instances fetch .* not the FIPS ones.*then remove aws:useFipsEndpoint$/],
            ["endpoints", '[{"ssm":"http://127.0.0.1:1"}]', /^aws:endpoints is set, but the fleet's instances read the bucket and the parameter at the standard S3 and SSM endpoints/],
        ] as const) {
            await assert.rejects(build(FLEET, { region: "eu-west-1", [key]: value }), (e: Error) => why.test(e.message), key);
            assert.deepEqual(recorded, [], `${key}: nothing registered`);
        }
        const { out } = await build(FLEET, { region: "eu-west-1", useFipsEndpoint: "false", useDualstackEndpoint: "true" });
        assert.ok(out.fleet, "false is no FIPS; dual-stack names reach the same service, which @pulumi/aws reads itself");
    });
    it("aws:assumeRole and every setting that picks another account or identity are refused: the fleet's check and destroy's uninstall call EC2 and SSM through the SDK's chain", async () => {
        // Unread, destroy's Run Command would look for the tagged instances in the credentials' own account, find none
        // there, and let the association and the role go while every instance keeps posting (issue 41 item 6).
        const keys = {
            assumeRole: '{"roleArn":"arn:aws:iam::123456789012:role/x"}', assumeRoles: '[{"roleArn":"arn:aws:iam::123456789012:role/x"}]',
            assumeRoleWithWebIdentity: '{"roleArn":"arn:aws:iam::123456789012:role/x"}', accessKey: "AKIAEXAMPLE", secretKey: "x", token: "t",
            sharedConfigFiles: '["/x"]', sharedCredentialsFiles: '["/x"]', allowedAccountIds: '["123456789012"]', forbiddenAccountIds: '["210987654321"]',
        };
        for (const [key, value] of Object.entries(keys)) {
            await assert.rejects(build(FLEET, { region: "eu-west-1", [key]: value }),
                (e: Error) => new RegExp(`^aws:${key} is set, but hostguard's calls for the fleet .* do not read it: .*then remove aws:${key}$`).test(e.message), key);
            assert.deepEqual(recorded, [], `${key}: nothing registered`);
            // setAllConfig adds to what earlier builds set: "" stands for "not set".
            pulumi.runtime.setAllConfig({ [`aws:${key}`]: "" });
        }
        const { out } = await build(FLEET, { region: "eu-west-1", profile: "prod-admin" });
        assert.ok(out.fleet, "aws:profile is read by every call");
        pulumi.runtime.setAllConfig({ "aws:profile": "" });
    });
    it("AWS_USE_FIPS_ENDPOINT in the environment, which @pulumi/aws reads the same way, is refused too", () => {
        const none = { get: (): undefined => undefined };
        assert.throws(() => refuseFleetAwsSettings(none, { AWS_USE_FIPS_ENDPOINT: "TRUE" }), /^Error: AWS_USE_FIPS_ENDPOINT=true is set .* then unset it$/);
        refuseFleetAwsSettings(none, { AWS_USE_FIPS_ENDPOINT: "false" });
    });
});

describe("npm run render on a fleet stack (tools/render.ts renderFleet)", () => {
    it("writes the bundles, the document, the association and the policies the program registers; the webhook only redacted", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-render-fleet-"));
        try {
            fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: hostguard\nruntime: nodejs\n");
            fs.writeFileSync(path.join(dir, "Pulumi.test.yaml"), [
                "config:", "  hostguard:delivery: ssm", "  hostguard:vpcId: vpc-0123456789abcdef0", "  hostguard:fleetRunsExpireDays: 9",
                `  hostguard:fleetPermissionsBoundary: ${BOUNDARY}`, "  hostguard:webhookUrl:", "    secure: v1:SENTINELCIPHERTEXT", "",
            ].join("\n"));
            const config = stackConfig(dir, "test");
            const out = await renderFleet(dir, "test", config, path.join(dir, "out", "test"));
            // The program under mocks, with the repository's real payload (as render uses it).
            recorded = [];
            pulumi.runtime.setAllConfig({ "hostguard:delivery": "ssm", "hostguard:vpcId": "vpc-0123456789abcdef0", "hostguard:fleetRunsExpireDays": "9",
                "hostguard:fleetPermissionsBoundary": BOUNDARY, "hostguard:webhookUrl": SENTINEL, "aws:region": "eu-west-1" }, ["hostguard:webhookUrl"]);
            const stack = buildStack(validateConfig({ delivery: "ssm", vpcId: "vpc-0123456789abcdef0", fleetRunsExpireDays: "9", fleetPermissionsBoundary: BOUNDARY, webhookUrl: SENTINEL },
                { secretKeys: SECRET_KEYS }));
            await new Promise((r) => pulumi.all([stack.fleet!.associationId, stack.fleet!.hostPolicyArn]).apply(r));
            await new Promise((r) => setTimeout(r, 200));
            const resources = [...recorded];

            const objects = resources.filter((r) => r.type === "aws:s3/bucketObjectv2:BucketObjectv2");
            assert.equal(objects.length, 4);
            for (const o of objects) {
                assert.deepEqual(fs.readFileSync(path.join(out, o.inputs.key)), Buffer.from(o.inputs.contentBase64, "base64"), o.inputs.key);
            }
            assert.equal(fs.readFileSync(path.join(out, "document.json"), "utf8"), `${one(resources, "aws:ssm/document:Document").inputs.content}\n`);
            const association = JSON.parse(fs.readFileSync(path.join(out, "association.json"), "utf8"));
            const registered = one(resources, "aws:ssm/association:Association").inputs;
            assert.equal(association.parameters.Bundles, registered.parameters.Bundles);
            assert.equal(association.parameters.WebhookParameter, registered.parameters.WebhookParameter);
            assert.deepEqual([association.targets, association.associationName, association.scheduleExpression, association.outputLocation.s3KeyPrefix],
                [registered.targets, registered.associationName, registered.scheduleExpression, registered.outputLocation.s3KeyPrefix]);
            assert.deepEqual(JSON.parse(fs.readFileSync(path.join(out, "lifecycle.json"), "utf8")),
                one(resources, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs.rules);
            const policy = JSON.parse(fs.readFileSync(path.join(out, "host-policy.json"), "utf8"));
            assert.deepEqual(policy.Statement.map((x: any) => [x.Sid, x.Action]),
                JSON.parse(one(resources, "aws:iam/rolePolicy:RolePolicy").inputs.policy).Statement.map((x: any) => [x.Sid, x.Action]));
            assert.equal(fs.readFileSync(path.join(out, "webhook-parameter.txt"), "utf8"), 'url=<redacted: set with pulumi config set --secret hostguard:webhookUrl>\n');
            assert.equal(fs.statSync(path.join(out, "webhook-parameter.txt")).mode & 0o777, 0o600);
            const manifest = JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8"));
            assert.equal(manifest.targetTag, "hostguard-stack=hostguard/test");
            assert.equal(manifest.permissionsBoundary, one(resources, "aws:iam/role:Role").inputs.permissionsBoundary);
            assert.equal(manifest.permissionsBoundary, BOUNDARY);
            assert.deepEqual(Object.values(manifest.bundles).map((b: any) => b.key).sort(), objects.map((o) => o.inputs.key).sort());
            const all = fs.readdirSync(out, { recursive: true }).map(String).filter((f) => fs.statSync(path.join(out, f)).isFile());
            assert.ok(!all.some((f) => fs.readFileSync(path.join(out, f), "latin1").includes("SENTINELCIPHERTEXT")));
            assert.deepEqual(placeholderLines(config), []);
            // A placeholder is named, as for an SSH stack (main exits 1 on it).
            fs.writeFileSync(path.join(dir, "Pulumi.ph.yaml"), `config:\n  hostguard:delivery: ssm\n  hostguard:vpcId: vpc-REPLACE-ME-prod\n  hostguard:fleetPermissionsBoundary: ${BOUNDARY}\n`);
            assert.match(placeholderLines(stackConfig(dir, "ph")).join("\n"), /vpcId/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe("delivery ssm: the config", () => {
    const refused = (raw: RawConfig, key: string, text: RegExp): void => {
        assert.throws(() => validateConfig(raw, { secretKeys: SECRET_KEYS }), (e: unknown) => e instanceof ConfigError && e.key === key && text.test(e.message));
    };
    it("refuses hosts[] entries (and the other SSH keys), naming the conflict", () => {
        refused({ ...FLEET, hosts: JSON.stringify([{ name: "a", host: "h" }]) }, "hosts", /not used with hostguard:delivery ssm.*remove hostguard:hosts, or set hostguard:delivery ssh/);
        refused({ ...FLEET, sshPrivateKey: "k" }, "sshPrivateKey", /not used with hostguard:delivery ssm/);
        refused({ ...FLEET, cronMinute: "3" }, "cronMinute", /not used with hostguard:delivery ssm/);
    });
    it("needs no hosts, SSH key or adminCidrs; aws must stay true", () => {
        const c = validateConfig(FLEET, { secretKeys: SECRET_KEYS });
        assert.deepEqual([c.delivery, c.hosts, c.fleet], ["ssm", [], { schedule: "rate(30 minutes)", maxConcurrency: "10%", maxErrors: "0", runsExpireDays: 30, permissionsBoundary: BOUNDARY }]);
        refused({ ...FLEET, fleetPermissionsBoundary: undefined }, "fleetPermissionsBoundary",
            /is required with hostguard:delivery ssm: have an IAM administrator create the boundary policy of docs\/aws.md \(Fleet path\) once, then `pulumi config set hostguard:fleetPermissionsBoundary arn:aws:iam::<account>:policy\/<its name>`$/);
        refused({ ...FLEET, fleetPermissionsBoundary: "hostguard-boundary-hostguard-test" }, "fleetPermissionsBoundary", /arn:aws:iam::<12-digit account>:policy\/<name>/);
        refused({ ...FLEET, aws: "false" }, "aws", /must be true with hostguard:delivery ssm/);
    });
    it("refuses an adopted group (and the keys of instances carrying groups): the fleet's launch template gets the created group", () => {
        refused({ ...FLEET, securityGroupId: "sg-0123456789abcdef0" }, "securityGroupId",
            /is not used with hostguard:delivery ssm: the fleet gets the group the stack creates in hostguard:vpcId \(the output securityGroupId, for its launch template\).*remove hostguard:securityGroupId$/);
        refused({ ...FLEET, keepSecurityGroupIds: '["sg-0123456789abcdef0"]' }, "keepSecurityGroupIds", /not used with hostguard:delivery ssm/);
        refused({ ...FLEET, sharedSecurityGroupInstances: '["i-0123456789abcdef0"]' }, "sharedSecurityGroupInstances", /not used with hostguard:delivery ssm/);
    });
    it("a fleet without a region is refused before any resource (its check reads EC2 there)", async () => {
        const env = process.env.AWS_REGION;
        delete process.env.AWS_REGION;
        try {
            await assert.rejects(build(FLEET, {}), /the AWS region is not set: set aws:region/);
            assert.deepEqual(recorded, []);
        } finally {
            if (env !== undefined) {
                process.env.AWS_REGION = env;
            }
        }
    });
    it("no warning that the group is attached to no instance: a fleet's group goes to its launch template", () => {
        assert.deepEqual(configWarnings(validateConfig(FLEET, { secretKeys: SECRET_KEYS })).filter((w) => w.includes("instanceId")), []);
    });
    it("checks the schedule and rate control, and refuses them with delivery ssh", () => {
        refused({ ...FLEET, fleetSchedule: "rate(5 minutes)" }, "fleetSchedule", /at least rate\(30 minutes\)/);
        refused({ ...FLEET, fleetSchedule: "every hour" }, "fleetSchedule", /rate\(N minutes/);
        refused({ ...FLEET, fleetMaxConcurrency: "0" }, "fleetMaxConcurrency", /1-9999/);
        refused({ ...FLEET, fleetMaxErrors: "101%" }, "fleetMaxErrors", /0%-100%/);
        refused({ ...FLEET, fleetRunsExpireDays: "0" }, "fleetRunsExpireDays", /an integer between 1 and 3650, got "0"/);
        refused({ ...FLEET, fleetRunsExpireDays: "3651" }, "fleetRunsExpireDays", /an integer between 1 and 3650, got "3651"/);
        refused({ ...FLEET, delivery: "scp" }, "delivery", /ssh or ssm/);
        assert.equal(validateConfig({ ...FLEET, fleetSchedule: "cron(0 */2 * * ? *)" }, { secretKeys: SECRET_KEYS }).fleet!.schedule, "cron(0 */2 * * ? *)");
        refused({ hosts: JSON.stringify([{ name: "a", host: "h", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyFake0000000000000000000000000000000A" }]),
            aws: "false", webhookUrl: SENTINEL, sshPrivateKey: "k", fleetSchedule: "rate(1 hours)" }, "fleetSchedule", /only used with hostguard:delivery ssm/);
    });
});
