// What a fleet (hostguard:delivery ssm) is told, as pure functions: the SSM
// Command document whose one aws:runShellScript step runs the host-side step
// (scripts/hostguard/fleet/ssmstep.py, carried inline: a new instance has nothing
// of hostguard yet), the association's parameters (names and hashes only,
// each with an allowedPattern), the keys of the bundle objects and the
// instance role's grants. components/fleet.ts wires them to @pulumi/aws.
import * as fs from "node:fs";
import * as path from "node:path";
import { PARTS, type Part } from "./fileTable";

/** The tag that puts an instance in the stack's fleet (the association's target). */
export const FLEET_TAG = "hostguard-stack";
export const STEP_SOURCE = path.resolve(__dirname, "..", "scripts", "hostguard", "fleet", "ssmstep.py");
/** The heredoc delimiter of the inline step; the step's text must not hold it. */
const STEP_END = "HOSTGUARD_STEP";

/** What Pulumi accepts in a project's and a stack's name (letters, digits, `_`, `.`, `-`; at most 100). */
const PULUMI_NAME = /^[A-Za-z0-9_.-]{1,100}$/;
/** State Manager's AssociationName: 3-128 of letters, digits, `_`, `-`, `.`. */
const ASSOCIATION_NAME_MAX = 128;

/**
 * The fleet's names that are not auto-named, each derived from the project and
 * the stack so that two projects' stacks of the same name never share one in
 * an account and region: `/` separates the two in the tag value and the
 * parameter path (neither name can hold one), so those are one-to-one. Every
 * character Pulumi allows in either name is allowed in all of them (the KMS
 * key has no alias: an alias refuses a period). Throws, naming the reason,
 * for a name no fleet resource can carry.
 */
export interface FleetNames {
    /** The value of the tag hostguard-stack (the association's target): `<project>/<stack>`. */
    tagValue: string;
    /** The stack's parameters: `/hostguard/<project>/<stack>/`. */
    parameterPrefix: string;
    webhookParameter: string;
    /** `hostguard-<project>-<stack>`. */
    associationName: string;
}

export function fleetNames(project: string, stack: string): FleetNames {
    for (const [what, name] of [["project", project], ["stack", stack]] as const) {
        if (!PULUMI_NAME.test(name)) {
            throw new Error(`the ${what} name ${JSON.stringify(name)} cannot name a fleet's resources: it must be 1-100 letters, digits, "_", "." or "-" (what Pulumi accepts)`);
        }
    }
    const associationName = `hostguard-${project}-${stack}`;
    if (associationName.length > ASSOCIATION_NAME_MAX) {
        throw new Error(`the association's name hostguard-<project>-<stack> would be ${associationName.length} characters, State Manager allows ${ASSOCIATION_NAME_MAX}: `
            + `shorten the project name (${project.length}) or the stack name (${stack.length}) to ${ASSOCIATION_NAME_MAX - "hostguard--".length} together`);
    }
    const parameterPrefix = `/hostguard/${project}/${stack}/`;
    return { tagValue: `${project}/${stack}`, parameterPrefix, webhookParameter: `${parameterPrefix}webhook`, associationName };
}

/** Content-addressed: the sha256 of the bundle's tar bytes, which the step checks. */
export function bundleKey(part: Part, tarSha256: string): string {
    return `bundles/${part}/${tarSha256}.tar`;
}

/** The association's Bundles value: `part:sha256` in install order. */
export function bundlesValue(bundles: ReadonlyArray<{ part: Part; tarSha256: string }>): string {
    return PARTS.map((p) => bundles.find((b) => b.part === p)).filter((b) => b !== undefined).map((b) => `${b.part}:${b.tarSha256}`).join(" ");
}

const SHA = "[0-9a-f]{64}";
const PART = `(${PARTS.join("|")})`;
/** Each parameter's pattern: names and hashes only, never a quote, a space where none belongs, or a secret. */
export const DOCUMENT_PARAMETERS = {
    Bucket: { description: "the stack's bundle bucket", allowedPattern: "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$" },
    Bundles: { description: "each part's bundle as part:sha256 of its tar, in install order", allowedPattern: `^base:${SHA}( ${PART}:${SHA}){0,3}$` },
    WebhookParameter: { description: "the SecureString parameter holding the webhook file", allowedPattern: "^/hostguard/[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}/webhook$" },
    WebhookVersion: { description: "the version of that parameter to apply (a rotation changes it)", allowedPattern: "^[0-9]{1,10}$" },
} as const;
export type DocumentParameter = keyof typeof DOCUMENT_PARAMETERS;

/** The SSM Command document (schema 2.2) as JSON text. */
export function renderDocument(step: string = fs.readFileSync(STEP_SOURCE, "utf8")): string {
    if (step.includes("{{") || step.split("\n").includes(STEP_END)) {
        throw new Error(`${path.relative(path.resolve(__dirname, ".."), STEP_SOURCE)} must hold neither "{{" (the agent substitutes it) nor a line ${STEP_END}`);
    }
    const args = (Object.keys(DOCUMENT_PARAMETERS) as DocumentParameter[]).map((p) => `'{{ ${p} }}'`).join(" ");
    return JSON.stringify({
        schemaVersion: "2.2",
        description: "hostguard: fetch each part's bundle from S3, check its sha256, install the parts in order and set the webhook from Parameter Store (components/ssmDocument.ts)",
        parameters: Object.fromEntries(Object.entries(DOCUMENT_PARAMETERS).map(([k, v]) => [k, { type: "String", ...v }])),
        mainSteps: [{
            action: "aws:runShellScript",
            name: "hostguardApply",
            precondition: { StringEquals: ["platformType", "Linux"] },
            inputs: {
                timeoutSeconds: "1800",
                runCommand: [
                    "#!/bin/sh",
                    "# hostguard: the parameters are names and hashes only (their patterns admit no quote).",
                    `exec /usr/bin/python3 -I - ${args} <<'${STEP_END}'`,
                    ...step.replace(/\n$/, "").split("\n"),
                    STEP_END,
                ],
            },
        }],
    }, null, 2);
}

/** The association's parameters: every value a name, a hash or a version. */
export function associationParameters(v: { bucket: string; bundles: string; webhookParameter: string; webhookVersion: string }): Record<DocumentParameter, string> {
    const out = { Bucket: v.bucket, Bundles: v.bundles, WebhookParameter: v.webhookParameter, WebhookVersion: v.webhookVersion };
    for (const [k, value] of Object.entries(out) as Array<[DocumentParameter, string]>) {
        if (!new RegExp(DOCUMENT_PARAMETERS[k].allowedPattern).test(value)) {
            throw new Error(`association parameter ${k} ${JSON.stringify(value)} does not match ${DOCUMENT_PARAMETERS[k].allowedPattern}`);
        }
    }
    return out;
}

/**
 * What the SSM agent itself calls, granted on `*` (these actions name no
 * resource of the stack): the actions of AWS's managed policy
 * AmazonSSMManagedInstanceCore (version v2, 2019-05-23; moto carries a copy in
 * moto/iam/aws_managed_policies.py) less those that read data or serve
 * features hostguard does not use: `ssm:GetParameter` and `ssm:GetParameters`
 * (on `*` they read every String parameter of the account: the step reads its
 * own parameter through the scoped grant below), `ssm:GetManifest` and
 * `ssm:PutConfigurePackageResult` (Distributor), `ssm:GetDeployablePatchSnapshotForInstance`
 * (Patch Manager), `ssm:PutInventory` (Inventory). docs/fleets.md lists them.
 */
export const SSM_AGENT_ACTIONS: readonly string[] = [
    // Registration and heartbeat (the instance appears as managed).
    "ssm:UpdateInstanceInformation",
    // State Manager: the instance's associations, their documents and parameters, their status and compliance.
    "ssm:ListAssociations", "ssm:ListInstanceAssociations", "ssm:DescribeAssociation", "ssm:GetDocument", "ssm:DescribeDocument",
    "ssm:UpdateAssociationStatus", "ssm:UpdateInstanceAssociationStatus", "ssm:PutComplianceItems",
    // Run Command and Session Manager delivery: the control channel (agents 3.3.40 and later) and the older message service.
    "ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel",
    "ec2messages:AcknowledgeMessage", "ec2messages:DeleteMessage", "ec2messages:FailMessage", "ec2messages:GetEndpoint",
    "ec2messages:GetMessages", "ec2messages:SendReply",
];

/** The ARN partition of an ARN (`aws`, `aws-cn`, `aws-us-gov`). */
function partitionOf(arn: string): string {
    return /^arn:([a-z-]+):/.exec(arn)?.[1] ?? "aws";
}

/**
 * The hosts' grants, the whole of what the stack's role may do (no managed
 * policy beside it), also as a managed policy for fleets that keep their own
 * role: what the SSM agent calls (SSM_AGENT_ACTIONS), read the bundles, write
 * the run outputs, read this stack's webhook parameter only (its ARN), decrypt
 * only with the stack's key and only through SSM.
 */
export function hostPolicy(bucketArn: string, parameterArn: string, keyArn: string): string {
    const partition = partitionOf(bucketArn);
    return JSON.stringify({
        Version: "2012-10-17",
        Statement: [
            { Sid: "SsmAgent", Effect: "Allow", Action: SSM_AGENT_ACTIONS, Resource: "*" },
            { Sid: "ReadBundles", Effect: "Allow", Action: "s3:GetObject", Resource: `${bucketArn}/bundles/*` },
            { Sid: "WriteRunOutputs", Effect: "Allow", Action: "s3:PutObject", Resource: `${bucketArn}/${RUNS_PREFIX}*` },
            { Sid: "ReadStackParameter", Effect: "Allow", Action: "ssm:GetParameter", Resource: parameterArn },
            {
                Sid: "DecryptViaSsm", Effect: "Allow", Action: "kms:Decrypt", Resource: keyArn,
                Condition: { StringLike: { "kms:ViaService": `ssm.*.${partition === "aws-cn" ? "amazonaws.com.cn" : "amazonaws.com"}` } },
            },
        ],
    });
}

/** Where the association's outputs go: the agent writes `runs/<instance id>/<association id>/<run>/<step>/stdout|stderr`. */
export const RUNS_PREFIX = "runs/";

/**
 * The bucket's policy: every request over plain HTTP is refused, whoever
 * makes it (aws:SecureTransport false), on the bucket and every object.
 */
export function bucketPolicy(bucketArn: string): string {
    return JSON.stringify({
        Version: "2012-10-17",
        Statement: [{
            Sid: "RefusePlainHttp", Effect: "Deny", Principal: "*", Action: "s3:*", Resource: [bucketArn, `${bucketArn}/*`],
            Condition: { Bool: { "aws:SecureTransport": "false" } },
        }],
    });
}

/** The bucket's lifecycle rules (@pulumi/aws's shape): outputs under runs/ expire after `days`; an upload left half done after a day. */
export function lifecycleRules(days: number): Array<{
    id: string; status: "Enabled"; filter: { prefix: string }; expiration: { days: number }; abortIncompleteMultipartUpload: { daysAfterInitiation: number };
}> {
    return [{
        id: "hostguard-runs-expire", status: "Enabled", filter: { prefix: RUNS_PREFIX }, expiration: { days },
        abortIncompleteMultipartUpload: { daysAfterInitiation: 1 },
    }];
}

/** The role's trust: EC2 instances (through their instance profile). */
export const EC2_TRUST = JSON.stringify({
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }],
});
