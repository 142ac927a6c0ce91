// Composition of the whole stack from validated config: one security group
// (unless hostguard:aws is false) and one HostDeployment per host. index.ts and
// the mock tests both call buildStack, so the tests exercise the real wiring.
import * as pulumi from "@pulumi/pulumi";
import { HostguardConfig, INSECURE_HOST_KEY_OPT_OUT, NAMESPACE, RawConfig, uncheckedHostKeys } from "./config";
import { HostDeployment, type InstalledFile } from "./hostDeployment";
import { IngressRule, SecurityGroup } from "./securityGroup";
import { PayloadFile } from "./render";

/** The namespace's raw values (secrets included, decrypted by the engine): validated, never printed. */
export function rawStackConfig(): RawConfig {
    const prefix = `${NAMESPACE}:`;
    return Object.fromEntries(Object.entries(pulumi.runtime.allConfig())
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, v]) => [k.slice(prefix.length), v]));
}

export interface HostOutputs {
    files: pulumi.Output<InstalledFile[]>;
    partHashes: pulumi.Output<Record<string, string>>;
    /** Seconds 0-599 after each 10-minute mark at which the monitors run. */
    cronOffset: pulumi.Output<number>;
    cronSchedule: pulumi.Output<string>;
    jail: string;
}

export interface StackOutputs {
    securityGroupId?: pulumi.Output<string>;
    securityGroupIngress?: IngressRule[];
    /** Ids of the interfaces set to the created group (`instanceId/eni-...`; created group and `instanceId` only). */
    securityGroupInterfaceIds?: pulumi.Output<string>[];
    hosts: Record<string, HostOutputs>;
}

/** The opt-out's warning, on every preview and up while it is set; empty when it is not. */
export function hostKeyWarning(config: Pick<HostguardConfig, "insecureAcceptAnyHostKey" | "hosts" | "bastion">): string {
    if (!config.insecureAcceptAnyHostKey) {
        return "";
    }
    const unchecked = uncheckedHostKeys(config);
    const which = unchecked.length === 0 ? "no connection at the moment (every host key is set; remove the key)"
        : unchecked.map((u) => `${NAMESPACE}:${u.key} of ${u.target}`).join(", ");
    return `INSECURE: ${NAMESPACE}:${INSECURE_HOST_KEY_OPT_OUT} is true. SSH accepts ANY server key for ${which}: ` +
        "anyone on the network path can pose as the server and receive the webhook URL and every script. " +
        `Set the host keys (\`ssh-keyscan -t ed25519 HOST\` over a trusted path) and remove ${NAMESPACE}:${INSECURE_HOST_KEY_OPT_OUT}.`;
}

export function buildStack(config: HostguardConfig, payload?: PayloadFile[]): StackOutputs {
    const warning = hostKeyWarning(config);
    if (warning) {
        pulumi.log.warn(warning);
    }
    const cfg = new pulumi.Config(NAMESPACE);
    const webhookUrl = cfg.requireSecret("webhookUrl");
    const privateKey = cfg.requireSecret("sshPrivateKey");
    const bastionPrivateKey = cfg.getSecret("bastionPrivateKey");
    const heartbeatUrl = config.hasHeartbeatUrl ? cfg.requireSecret("heartbeatUrl") : undefined;

    const out: StackOutputs = { hosts: {} };
    if (config.aws && config.vpcId) {
        const sg = new SecurityGroup("hostguard", {
            // The provider's region setting, else the SDK's own environment variable.
            region: new pulumi.Config("aws").get("region") || process.env.AWS_REGION,
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
    }
    for (const host of config.hosts) {
        const d = new HostDeployment(host.name, {
            host, settings: config.settings, privateKey, bastion: config.bastion, bastionPrivateKey, webhookUrl, heartbeatUrl,
            adminCidrs: config.adminCidrs, payload,
        });
        out.hosts[host.name] = {
            files: d.files, partHashes: d.partHashes, cronOffset: d.cronOffset, cronSchedule: d.cronSchedule, jail: d.jail,
        };
    }
    return out;
}
