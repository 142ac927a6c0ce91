// What a fleet (hostguard:delivery ssm) is told, as pure functions: the SSM
// Command document whose one aws:runShellScript step runs the host-side step
// (scripts/hostguard/ssmstep.py, carried inline: a new instance has nothing
// of hostguard yet), the association's parameters (names and hashes only,
// each with an allowedPattern), the keys of the bundle objects and the
// instance role's grants. components/fleet.ts wires them to @pulumi/aws.
import * as fs from "node:fs";
import * as path from "node:path";
import { PARTS, type Part } from "./fileTable";

/** The tag that puts an instance in the stack's fleet (the association's target). */
export const FLEET_TAG = "hostguard-stack";
export const STEP_SOURCE = path.resolve(__dirname, "..", "scripts", "hostguard", "ssmstep.py");
/** The heredoc delimiter of the inline step; the step's text must not hold it. */
const STEP_END = "HOSTGUARD_STEP";

/** This stack's parameters: /hostguard/<stack>/... */
export function parameterPrefix(stack: string): string {
    return `/hostguard/${stack}/`;
}

export function webhookParameterName(stack: string): string {
    return `${parameterPrefix(stack)}webhook`;
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
    WebhookParameter: { description: "the SecureString parameter holding the webhook file", allowedPattern: "^/hostguard/[A-Za-z0-9_.-]{1,100}/webhook$" },
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
 * The hosts' grants, as the inline policy of the stack's role and as a
 * managed policy for fleets that keep their own role: read the bundles, write
 * the run outputs, read this stack's parameters only, decrypt only through SSM.
 */
export function hostPolicy(bucketArn: string, stack: string, keyArn: string): string {
    return JSON.stringify({
        Version: "2012-10-17",
        Statement: [
            { Sid: "ReadBundles", Effect: "Allow", Action: "s3:GetObject", Resource: `${bucketArn}/bundles/*` },
            { Sid: "WriteRunOutputs", Effect: "Allow", Action: "s3:PutObject", Resource: `${bucketArn}/runs/*` },
            { Sid: "ReadStackParameters", Effect: "Allow", Action: "ssm:GetParameter", Resource: `arn:aws:ssm:*:*:parameter${parameterPrefix(stack)}*` },
            {
                Sid: "DecryptViaSsm", Effect: "Allow", Action: "kms:Decrypt", Resource: keyArn,
                Condition: { StringLike: { "kms:ViaService": "ssm.*.amazonaws.com" } },
            },
        ],
    });
}

/** The role's trust: EC2 instances (through their instance profile). */
export const EC2_TRUST = JSON.stringify({
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }],
});

export const SSM_CORE_POLICY = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore";
