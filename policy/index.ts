// The hostguard policy pack: run with `pulumi preview --policy-pack policy`.
import { PolicyPack } from "@pulumi/policy";
import { noAllProtocolsInbound, noWorldInboundExceptHttps, remoteCommandHostKey, sshSourcesLimited, webhookInputsSecret } from "./policies";

new PolicyPack("hostguard", {
    policies: [noWorldInboundExceptHttps(), noAllProtocolsInbound(), webhookInputsSecret(), remoteCommandHostKey(), sshSourcesLimited()],
});
