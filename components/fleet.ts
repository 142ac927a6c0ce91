// hostguard:delivery ssm: a fleet found by its tag, hardened by Systems
// Manager State Manager with no SSH (model: pulumi-awsx components). The
// bundles are content-addressed objects of a private bucket, the webhook file
// a SecureString under /hostguard/<project>/<stack>/, and one association runs
// the document (components/ssmDocument.ts) on every instance tagged
// hostguard-stack=<project>/<stack>, on a schedule, with rate control, its outputs
// under runs/ of the same bucket. A payload change replaces the objects and
// updates the association's Bundles; a rotation updates the parameter, whose
// new version the association carries.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { sha256, tarFiles, type PartBundle } from "./bundles";
import { type FleetSettings } from "./config";
import { FleetUninstall } from "./fleetUninstall";
import { HOSTGUARD_TAG } from "./ec2Reconcile";
import {
    associationParameters, bucketPolicy, bundleKey, bundlesValue, EC2_TRUST, FLEET_TAG, fleetNames, hostPolicy, lifecycleRules, renderDocument, RUNS_PREFIX,
} from "./ssmDocument";

export interface FleetDeliveryArgs {
    /** The Pulumi project's and stack's names: the tag value, the parameter path, the association's name (ssmDocument.ts fleetNames). */
    project: string;
    stack: string;
    bundles: PartBundle[];
    /** Secret: the webhook file's text (components/remoteCommands.ts webhookFileText). */
    webhookFile: pulumi.Input<string>;
    fleet: FleetSettings;
    /** Where the destroy's uninstall finds the tagged instances (aws:region, aws:profile). */
    region: string;
    profile?: string;
}

/** How long `pulumi destroy` waits for the tagged instances' uninstall (components/fleetUninstall.ts). */
export const UNINSTALL_WAIT_SECONDS = 300;

export class FleetDelivery extends pulumi.ComponentResource {
    public readonly bucketName: pulumi.Output<string>;
    public readonly documentName: pulumi.Output<string>;
    public readonly associationId: pulumi.Output<string>;
    /** For the fleet's launch template. */
    public readonly instanceProfileName: pulumi.Output<string>;
    /** The same grants for fleets that keep their own role. */
    public readonly hostPolicyArn: pulumi.Output<string>;
    public readonly webhookParameter: pulumi.Output<string>;
    /** The tag (key=value) an instance needs to be hardened. */
    public readonly targetTag: string;

    constructor(name: string, args: FleetDeliveryArgs, opts?: pulumi.ComponentResourceOptions) {
        super("hostguard:fleet:FleetDelivery", name, {}, opts);
        const parent = { parent: this };
        const names = fleetNames(args.project, args.stack);
        this.targetTag = `${FLEET_TAG}=${names.tagValue}`;

        const bucket = new aws.s3.Bucket(`${name}-bundles`, { forceDestroy: true }, parent);
        new aws.s3.BucketPublicAccessBlock(`${name}-bundles`, {
            bucket: bucket.id, blockPublicAcls: true, blockPublicPolicy: true, ignorePublicAcls: true, restrictPublicBuckets: true,
        }, parent);
        new aws.s3.BucketServerSideEncryptionConfiguration(`${name}-bundles`, {
            bucket: bucket.id, rules: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: "AES256" } }],
        }, parent);
        new aws.s3.BucketPolicy(`${name}-bundles`, { bucket: bucket.id, policy: bucket.arn.apply(bucketPolicy) }, parent);
        new aws.s3.BucketLifecycleConfiguration(`${name}-bundles`, { bucket: bucket.id, rules: lifecycleRules(args.fleet.runsExpireDays) }, parent);

        const objects = args.bundles.map((b) => {
            const tar = tarFiles(b.files);
            const key = pulumi.output(tar.then((t) => bundleKey(b.part, sha256(t))));
            return {
                part: b.part,
                tarSha256: pulumi.output(tar.then((t) => sha256(t))),
                object: new aws.s3.BucketObjectv2(`${name}-bundle-${b.part}`, {
                    bucket: bucket.id, key, contentBase64: pulumi.output(tar.then((t) => t.toString("base64"))),
                    checksumAlgorithm: "SHA256", contentType: "application/x-tar",
                }, parent),
            };
        });

        const key = new aws.kms.Key(`${name}-webhook`, {
            description: `hostguard ${names.tagValue}: the webhook's SecureString parameter`, enableKeyRotation: true, deletionWindowInDays: 7,
            // The deployer's policy scopes every call on the key to this tag (docs/aws.md, delivery ssm).
            tags: { [HOSTGUARD_TAG.key]: HOSTGUARD_TAG.value },
        }, parent);
        const parameter = new aws.ssm.Parameter(`${name}-webhook`, {
            name: names.webhookParameter, type: "SecureString", keyId: key.arn, value: pulumi.secret(args.webhookFile),
            description: "hostguard: the webhook file (URL line, format), read by the State Manager step and given to install set-webhook on stdin",
        }, { ...parent, additionalSecretOutputs: ["value"] });

        const policy = pulumi.all([bucket.arn, parameter.arn, key.arn]).apply(([b, p, k]) => hostPolicy(b, p, k));
        // The boundary caps the role (docs/aws.md, Fleet path): the deployer may create or change roles only with it.
        const role = new aws.iam.Role(`${name}-host`, {
            assumeRolePolicy: EC2_TRUST, permissionsBoundary: args.fleet.permissionsBoundary, description: `hostguard ${names.tagValue}: the fleet's instances`,
        }, parent);
        const rolePolicy = new aws.iam.RolePolicy(`${name}-host`, { role: role.id, policy }, parent);
        const profile = new aws.iam.InstanceProfile(`${name}-host`, { role: role.name }, parent);
        const standalone = new aws.iam.Policy(`${name}-host-grants`, {
            policy, description: `hostguard ${names.tagValue}: everything a fleet instance needs (the SSM agent's calls included), for a role of your own`,
        }, parent);

        const document = new aws.ssm.Document(`${name}-apply`, {
            documentType: "Command", documentFormat: "JSON", content: renderDocument(),
        }, parent);
        const parameters = pulumi.all([bucket.bucket, pulumi.all(objects.map((o) => o.tarSha256)), parameter.version])
            .apply(([b, shas, version]) => associationParameters({
                bucket: b, bundles: bundlesValue(objects.map((o, i) => ({ part: o.part, tarSha256: shas[i] }))),
                webhookParameter: names.webhookParameter, webhookVersion: String(version),
            }));
        // Destroy deletes it after the association and before what it names or needs: it uninstalls the fleet.
        const uninstall = new FleetUninstall(`${name}-uninstall`, {
            region: args.region, ...(args.profile ? { profile: args.profile } : {}), tagKey: FLEET_TAG, tagValue: names.tagValue,
            waitSeconds: UNINSTALL_WAIT_SECONDS,
        }, { ...parent, dependsOn: [document, parameter, key, role, rolePolicy, profile, ...objects.map((o) => o.object)] });
        const association = new aws.ssm.Association(`${name}-apply`, {
            name: document.name,
            associationName: names.associationName,
            targets: [{ key: `tag:${FLEET_TAG}`, values: [names.tagValue] }],
            scheduleExpression: args.fleet.schedule,
            maxConcurrency: args.fleet.maxConcurrency,
            maxErrors: args.fleet.maxErrors,
            complianceSeverity: "HIGH",
            outputLocation: { s3BucketName: bucket.bucket, s3KeyPrefix: RUNS_PREFIX },
            parameters,
        }, { ...parent, dependsOn: [uninstall, ...objects.map((o) => o.object)] });

        this.bucketName = bucket.bucket;
        this.documentName = document.name;
        this.associationId = association.associationId;
        this.instanceProfileName = profile.name;
        this.hostPolicyArn = standalone.arn;
        this.webhookParameter = parameter.name;
        this.registerOutputs({
            bucketName: this.bucketName, documentName: this.documentName, associationId: this.associationId,
            instanceProfileName: this.instanceProfileName, hostPolicyArn: this.hostPolicyArn, webhookParameter: this.webhookParameter, targetTag: this.targetTag,
        });
    }
}
