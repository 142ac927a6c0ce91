// Composition of the whole stack from validated config: one security group
// (unless hostguard:aws is false) and one HostDeployment per host. index.ts and
// the mock tests both call buildStack, so the tests exercise the real wiring.
import * as pulumi from "@pulumi/pulumi";
import { HostguardConfig, NAMESPACE, RawConfig, validateConfig } from "./config";
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
    cronSchedule: pulumi.Output<string>;
    jail: string;
}

export interface StackOutputs {
    securityGroupId?: pulumi.Output<string>;
    securityGroupIngress?: IngressRule[];
    /** Ids of the group's attachments to hosts' instances (created group and `instanceId` only). */
    securityGroupAttachmentIds?: pulumi.Output<string>[];
    hosts: Record<string, HostOutputs>;
}

export function buildStack(config: HostguardConfig, payload?: PayloadFile[]): StackOutputs {
    const cfg = new pulumi.Config(NAMESPACE);
    const webhookUrl = cfg.requireSecret("webhookUrl");
    const privateKey = cfg.requireSecret("sshPrivateKey");
    const bastionPrivateKey = cfg.getSecret("bastionPrivateKey");

    const out: StackOutputs = { hosts: {} };
    if (config.aws && config.vpcId) {
        const sg = new SecurityGroup("hostguard", {
            vpcId: config.vpcId,
            privateCidrs: config.privateCidrs,
            adminCidrs: config.adminCidrs,
            bastionSecurityGroupId: config.bastion?.securityGroupId,
            adoptId: config.securityGroupId,
            name: config.securityGroupName,
            description: config.securityGroupDescription,
            attachTo: config.hosts.flatMap((h) => (h.instanceId ? [{ name: h.name, instanceId: h.instanceId }] : [])),
        });
        out.securityGroupId = sg.groupId;
        out.securityGroupIngress = sg.ingress;
        out.securityGroupAttachmentIds = sg.attachmentIds;
    }
    for (const host of config.hosts) {
        const d = new HostDeployment(host.name, {
            host, settings: config.settings, privateKey, bastion: config.bastion, bastionPrivateKey, webhookUrl, payload,
        });
        out.hosts[host.name] = { files: d.files, partHashes: d.partHashes, cronSchedule: d.cronSchedule, jail: d.jail };
    }
    return out;
}
