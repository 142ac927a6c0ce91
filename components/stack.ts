// Composition of the whole stack from validated config: one security group
// (unless hostguard:aws is false) and one HostDeployment per host. index.ts and
// the mock tests both call buildStack, so the tests exercise the real wiring.
import * as pulumi from "@pulumi/pulumi";
import * as runtimeConfig from "@pulumi/pulumi/runtime/config";
import * as runtimeState from "@pulumi/pulumi/runtime/state";
import { configWarnings, HostguardConfig, NAMESPACE, RawConfig, refuseNamespaceTypos, refusePlaceholders, SECRET_KEYS } from "./config";
import { PAGERDUTY_REGIONS, resolveChatFormat, type ChatFormat } from "./chatFormats";
import { HostDeployment, type InstalledFile } from "./hostDeployment";
import { IngressRule, SecurityGroup } from "./securityGroup";
import { renderHost, type PayloadFile } from "./bundles";
import { FleetDelivery } from "./fleet";
import { FleetExposure } from "./fleetExposure";
import { FLEET_TAG, fleetNames } from "./ssmDocument";
import { webhookFileText } from "./remoteCommands";

/**
 * The namespace's raw values (secrets included, decrypted by the engine): validated, never printed.
 * Every key of the stack is looked at first: a namespace that is a typo of `hostguard` is refused.
 */
export function rawStackConfig(): RawConfig {
    const all = pulumi.runtime.allConfig();
    refuseNamespaceTypos(Object.keys(all));
    const prefix = `${NAMESPACE}:`;
    return Object.fromEntries(Object.entries(all)
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, v]) => [k.slice(prefix.length), v]));
}

/**
 * The namespace's keys the engine marks secret (it passes them in
 * PULUMI_CONFIG_SECRET_KEYS; the SDK reads them with its internal
 * isConfigSecret). Undefined when the engine said nothing (an old engine).
 */
export function stackSecretKeys(): string[] | undefined {
    // The SDK's store holds what the engine passed (the environment of a CLI run, or setAllConfig's keys).
    const store = (runtimeState as unknown as { getStore?: () => { config?: Record<string, string> } }).getStore?.();
    const list = store?.config?.PULUMI_CONFIG_SECRET_KEYS ?? process.env.PULUMI_CONFIG_SECRET_KEYS;
    const isSecret = (runtimeConfig as unknown as { isConfigSecret?: (k: string) => boolean }).isConfigSecret;
    if (list === undefined || list === "" || isSecret === undefined) {
        return undefined;
    }
    return SECRET_KEYS.filter((k) => isSecret(`${NAMESPACE}:${k}`));
}

export interface HostOutputs {
    files: pulumi.Output<InstalledFile[]>;
    partHashes: pulumi.Output<Record<string, string>>;
    jail: string;
}

export interface StackOutputs {
    securityGroupId?: pulumi.Output<string>;
    securityGroupIngress?: IngressRule[];
    /** Ids of the interfaces set to the created group (`instanceId/eni-...`; created group and `instanceId` only). */
    securityGroupInterfaceIds?: pulumi.Output<string>[];
    hosts: Record<string, HostOutputs>;
    /** hostguard:delivery ssm: what the fleet's launch template and a reviewer need (components/fleet.ts). */
    fleet?: {
        bucketName: pulumi.Output<string>; documentName: pulumi.Output<string>; associationId: pulumi.Output<string>;
        instanceProfileName: pulumi.Output<string>; hostPolicyArn: pulumi.Output<string>; webhookParameter: pulumi.Output<string>; targetTag: string;
    };
}

/**
 * The `aws:*` settings of @pulumi/aws's provider that decide which account,
 * identity or endpoint its calls use, and that the dynamic resources' EC2
 * client (the SDK's own chain, aws:region and aws:profile) does not read.
 * The value says what to do instead.
 */
export const UNREAD_AWS_SETTINGS: Readonly<Record<string, string>> = {
    assumeRole: "put the role in a profile of the shared config (`role_arn` with `source_profile` or `credential_source`) and set `aws:profile` to it "
        + "(or use AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE)",
    assumeRoles: "put the role chain in profiles of the shared config (`role_arn` with `source_profile`) and set `aws:profile` to the last",
    assumeRoleWithWebIdentity: "set AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE in the environment",
    accessKey: "give the keys in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or in a profile set as `aws:profile`",
    secretKey: "give the keys in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or in a profile set as `aws:profile`",
    token: "give the session token in the environment (AWS_SESSION_TOKEN) or in a profile set as `aws:profile`",
    sharedConfigFiles: "set AWS_CONFIG_FILE in the environment",
    sharedCredentialsFiles: "set AWS_SHARED_CREDENTIALS_FILE in the environment",
    endpoints: "set AWS_ENDPOINT_URL_EC2 (or AWS_ENDPOINT_URL) in the environment",
    allowedAccountIds: "make sure the credentials are the account's (`aws sts get-caller-identity`); hostguard's EC2 calls do not check it",
    forbiddenAccountIds: "make sure the credentials are not that account's (`aws sts get-caller-identity`); hostguard's EC2 calls do not check it",
    useFipsEndpoint: "set AWS_USE_FIPS_ENDPOINT=true in the environment (or `use_fips_endpoint = true` in the profile of `aws:profile`): the SDK reads those",
    useDualstackEndpoint: "set AWS_USE_DUALSTACK_ENDPOINT=true in the environment (or `use_dualstack_endpoint = true` in the profile of `aws:profile`)",
    ec2MetadataServiceEndpoint: "set AWS_EC2_METADATA_SERVICE_ENDPOINT in the environment",
    ec2MetadataServiceEndpointMode: "set AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE in the environment",
};

/**
 * delivery ssm: the settings that would send the stack's calls to other
 * endpoints than the ones the fleet's instances read from. @pulumi/aws reads
 * them, but the step on each instance (scripts/hostguard/fleet/ssmstep.py) calls S3
 * and Parameter Store at their standard regional endpoints.
 */
export const FLEET_REFUSED_AWS_SETTINGS: Readonly<Record<string, string>> = {
    useFipsEndpoint: "the fleet's instances fetch the bundles and the webhook parameter from the standard S3 and SSM endpoints, "
        + "not the FIPS ones, so the fleet would not hold to it: use delivery ssh, or leave FIPS endpoints out of this stack",
    endpoints: "the fleet's instances read the bucket and the parameter at the standard S3 and SSM endpoints of their region "
        + "(a VPC endpoint with private DNS answers those names): the stack must write them there too",
};

/** Refused at preview for delivery ssm, naming the setting: also AWS_USE_FIPS_ENDPOINT, which @pulumi/aws reads as aws:useFipsEndpoint. */
export function refuseFleetAwsSettings(awsConfig: { get(key: string): string | undefined }, env: NodeJS.ProcessEnv = process.env): void {
    const key = Object.keys(FLEET_REFUSED_AWS_SETTINGS).find((k) => Boolean(awsConfig.get(k)) && awsConfig.get(k) !== "false");
    if (key !== undefined) {
        throw new Error(`aws:${key} is set, but ${FLEET_REFUSED_AWS_SETTINGS[key]}; then remove aws:${key}`);
    }
    if ((env.AWS_USE_FIPS_ENDPOINT ?? "").toLowerCase() === "true") {
        throw new Error(`AWS_USE_FIPS_ENDPOINT=true is set (read as aws:useFipsEndpoint), but ${FLEET_REFUSED_AWS_SETTINGS.useFipsEndpoint}; then unset it`);
    }
}

/**
 * delivery ssm: the fleet's whole-host check (fleetExposure.ts) and destroy's
 * uninstall (fleetUninstall.ts) call EC2 and SSM through the SDK's chain
 * (aws:region and aws:profile) too. A setting of UNREAD_AWS_SETTINGS that
 * picks another account or identity is refused as on the EC2 paths: unread,
 * the uninstall would look for the tagged instances in another account, find
 * none, and let the stack go while the instances keep posting. (Dual-stack
 * names reach the same service and account: not refused.)
 */
export function refuseFleetUnreadAwsSettings(awsConfig: { get(key: string): string | undefined }): void {
    const key = Object.keys(UNREAD_AWS_SETTINGS).filter((k) => k !== "useDualstackEndpoint").find((k) => Boolean(awsConfig.get(k)) && awsConfig.get(k) !== "false");
    if (key !== undefined) {
        throw new Error(`aws:${key} is set, but hostguard's calls for the fleet (the whole-host check of the tagged instances, destroy's uninstall through `
            + `Run Command) do not read it: ${UNREAD_AWS_SETTINGS[key]}, then remove aws:${key}`);
    }
}

/**
 * Refused rather than ignored when the dynamic resources call EC2 (an
 * adopted group, or a hosts[].instanceId): the EC2 calls would run as another
 * identity, account or endpoint than the rest of the stack.
 */
export function refuseUnreadAwsSettings(config: Pick<HostguardConfig, "securityGroupId" | "hosts">, awsConfig: { get(key: string): string | undefined }): void {
    const dynamic = config.securityGroupId !== undefined || config.hosts.some((h) => h.instanceId !== undefined);
    const key = Object.keys(UNREAD_AWS_SETTINGS).find((k) => Boolean(awsConfig.get(k)) && awsConfig.get(k) !== "false");
    if (dynamic && key !== undefined) {
        throw new Error(`aws:${key} is set, but hostguard's EC2 calls (the adopted group, the interfaces of hosts[].instanceId) do not read it: `
            + `${UNREAD_AWS_SETTINGS[key]}, then remove aws:${key}`);
    }
}

/**
 * The one destination: the webhook with its format (detected again here from the decrypted URL, by the
 * rule validateConfig applied at preview), or PagerDuty's endpoint with the routing key. Secrets stay secret.
 */
function chatDestination(config: HostguardConfig, cfg: pulumi.Config): {
    webhookUrl: pulumi.Output<string>; chatFormat: pulumi.Output<ChatFormat>; pagerdutyRoutingKey?: pulumi.Output<string>;
} {
    if (config.hasPagerdutyRoutingKey) {
        return {
            webhookUrl: pulumi.output(PAGERDUTY_REGIONS[config.pagerdutyRegion]), chatFormat: pulumi.output("pagerduty" as const),
            pagerdutyRoutingKey: cfg.requireSecret("pagerdutyRoutingKey"),
        };
    }
    const webhookUrl = cfg.requireSecret("webhookUrl");
    const chatFormat = webhookUrl.apply((url) => resolveChatFormat({
        url: url.trim(), hasWebhookUrl: true, hasRoutingKey: false, configured: config.chatFormat,
    }) ?? "slack");
    return { webhookUrl, chatFormat };
}

export function buildStack(config: HostguardConfig, payload?: PayloadFile[]): StackOutputs {
    refusePlaceholders(config);
    for (const warning of configWarnings(config)) {
        pulumi.log.warn(warning);
    }
    const cfg = new pulumi.Config(NAMESPACE);
    const { webhookUrl, chatFormat, pagerdutyRoutingKey } = chatDestination(config, cfg);
    const privateKey = config.delivery === "ssh" ? cfg.requireSecret("sshPrivateKey") : pulumi.output("");
    const bastionPrivateKey = cfg.getSecret("bastionPrivateKey");
    const heartbeatUrl = config.hasHeartbeatUrl ? cfg.requireSecret("heartbeatUrl") : undefined;

    const out: StackOutputs = { hosts: {} };
    let fleetRegion: string | undefined;
    if (config.delivery === "ssm") {
        // A project or stack name no fleet resource can carry, or an aws:* setting the fleet would not
        // hold to, is refused here, before any resource exists.
        fleetNames(pulumi.getProject(), pulumi.getStack());
        refuseFleetAwsSettings(new pulumi.Config("aws"));
        refuseFleetUnreadAwsSettings(new pulumi.Config("aws"));
        // The provider's region setting, else the SDK's own environment variable (the fleet's check reads EC2 there).
        fleetRegion = new pulumi.Config("aws").get("region") || process.env.AWS_REGION;
        if (!fleetRegion) {
            throw new Error("the AWS region is not set: set aws:region (`pulumi config set aws:region eu-west-1`) or AWS_REGION");
        }
    }
    if (config.aws && config.vpcId) {
        const awsConfig = new pulumi.Config("aws");
        refuseUnreadAwsSettings(config, awsConfig);
        const sg = new SecurityGroup("hostguard", {
            // The provider's region setting, else the SDK's own environment variable.
            region: awsConfig.get("region") || process.env.AWS_REGION,
            profile: awsConfig.get("profile"),
            vpcId: config.vpcId,
            privateCidrs: config.privateCidrs,
            adminCidrs: config.adminCidrs,
            bastionSecurityGroupId: config.bastion?.securityGroupId,
            adoptId: config.securityGroupId,
            name: config.securityGroupName,
            description: config.securityGroupDescription,
            attachTo: config.hosts.flatMap((h) => (h.instanceId ? [{ name: h.name, instanceId: h.instanceId }] : [])),
            keepGroupIds: config.keepSecurityGroupIds,
            sharedInstances: config.sharedSecurityGroupInstances,
        });
        out.securityGroupId = sg.groupId;
        out.securityGroupIngress = sg.ingress;
        out.securityGroupInterfaceIds = sg.interfaceIds;
        if (config.delivery === "ssm") {
            // The whole-host check of every instance carrying the fleet's tag (read-only; at every preview and up).
            const profile = awsConfig.get("profile");
            new FleetExposure("hostguard-fleet-exposure", {
                region: fleetRegion!, ...(profile ? { profile } : {}), tagKey: FLEET_TAG,
                tagValue: fleetNames(pulumi.getProject(), pulumi.getStack()).tagValue, ingress: sg.ingress,
            });
        }
    }
    if (config.delivery === "ssm") {
        const bundles = renderHost(config.settings, payload, { cronMinute: config.cronMinute, adminCidrs: config.adminCidrs }).bundles;
        const f = new FleetDelivery("hostguard-fleet", {
            project: pulumi.getProject(), stack: pulumi.getStack(), bundles, fleet: config.fleet!,
            region: fleetRegion!, ...(new pulumi.Config("aws").get("profile") ? { profile: new pulumi.Config("aws").get("profile") } : {}),
            webhookFile: pulumi.secret(pulumi.all([webhookUrl, chatFormat ?? "slack", pagerdutyRoutingKey])
                .apply(([url, format, key]) => webhookFileText(url, format, key))),
        });
        out.fleet = {
            bucketName: f.bucketName, documentName: f.documentName, associationId: f.associationId,
            instanceProfileName: f.instanceProfileName, hostPolicyArn: f.hostPolicyArn, webhookParameter: f.webhookParameter, targetTag: f.targetTag,
        };
    }
    for (const host of config.hosts) {
        const d = new HostDeployment(host.name, {
            host, settings: config.settings, privateKey, bastion: config.bastion, bastionPrivateKey, webhookUrl, chatFormat, pagerdutyRoutingKey, heartbeatUrl,
            adminCidrs: config.adminCidrs, cronMinute: config.cronMinute, payload,
        });
        out.hosts[host.name] = {
            files: d.files, partHashes: d.partHashes, jail: d.jail,
        };
    }
    return out;
}
