// One target host: ships the payload over SSH with @pulumi/command remote
// commands, one per part (base, monitors, bantool, web) plus one for the
// webhook (and one for the heartbeat URL when the stack sets one). The tar of a part travels on stdin and its hash sits in the command
// text, so an unchanged part runs nothing and a changed one re-runs in place
// (an update runs `create` again; the installer is idempotent). Triggers are not
// used: in command 1.2.1 they force a replacement, whose create-before-delete
// order would run the old part's uninstall after the new install.
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { readPayload, renderHost, tarFiles, type PayloadFile } from "./bundles";
import { type ChatFormat } from "./chatFormats";
import { BastionSettings, PayloadSettings, TargetHost } from "./config";
import { PARTS, type Part } from "./fileTable";
import { JAIL_NAME } from "./hostFiles";
import {
    urlLine, partCreateCommand, partDeleteCommand, removeHeartbeatCommand, setHeartbeatCommand, setWebhookCommand,
    WEBHOOK_CHECK_TRANSIENT, webhookFileText,
} from "./remoteCommands";

export interface HostDeploymentArgs {
    host: TargetHost;
    settings: PayloadSettings;
    /** Secret: the SSH key of the deploy user. */
    privateKey: pulumi.Input<string>;
    bastion?: BastionSettings;
    /** Secret: the bastion's key; defaults to privateKey. */
    bastionPrivateKey?: pulumi.Input<string>;
    /** Secret: the chat webhook (PagerDuty's: its Events API endpoint). Reaches the host only on the stdin of set-webhook. */
    webhookUrl: pulumi.Input<string>;
    /** The webhook's format (default slack), written beside it in the same root-only file. */
    chatFormat?: pulumi.Input<ChatFormat>;
    /** Secret, PagerDuty only: the routing key, written beside the webhook in the same root-only file. */
    pagerdutyRoutingKey?: pulumi.Input<string>;
    /** Secret, optional: the heartbeat URL. Reaches the host only on the stdin of set-heartbeat. */
    heartbeatUrl?: pulumi.Input<string>;
    /** hostguard:adminCidrs, which the jail never bans. */
    adminCidrs?: readonly string[];
    /** hostguard:cronMinute; absent: the host derives its monitors' offset (scripts/at-offset.sh). */
    cronMinute?: number;
    /** Defaults to the files of scripts/. */
    payload?: PayloadFile[];
}

export interface InstalledFile {
    part: Part;
    /** Path in the part's bundle. */
    path: string;
    /** Where it lands on the host. */
    destination: string;
    sha256: string;
}

export class HostDeployment extends pulumi.ComponentResource {
    public readonly jail: string = JAIL_NAME;
    /** What the host received: every file of every part with its hash (no secret: the webhook is not a file here). */
    public readonly files: pulumi.Output<InstalledFile[]>;
    public readonly partHashes: pulumi.Output<Record<string, string>>;

    constructor(name: string, args: HostDeploymentArgs, opts?: pulumi.ComponentResourceOptions) {
        super("hostguard:host:HostDeployment", name, {}, opts);
        const payload = args.payload ?? readPayload();
        const sudo = args.host.user !== "root";

        // A render error (a bad files.table row, a payload file no part ships) belongs to this
        // host: a ResourceError on it, thrown before any child exists. The bundles are the
        // stack's, the same bytes for every host: nothing of this host is rendered into them.
        let rendered: ReturnType<typeof renderHost>;
        try {
            rendered = renderHost(args.settings, payload, { cronMinute: args.cronMinute, adminCidrs: args.adminCidrs ?? [] });
        } catch (e) {
            throw new pulumi.ResourceError(e instanceof Error ? e.message : String(e), this, true);
        }

        const connection = pulumi.secret(pulumi.output({
            host: args.host.host,
            port: args.host.port,
            user: args.host.user,
            privateKey: args.privateKey,
            hostKey: args.host.hostKey,
            perDialTimeout: 15,
            dialErrorLimit: 10,
            proxy: args.bastion ? {
                host: args.bastion.host,
                port: args.bastion.port,
                user: args.bastion.user,
                privateKey: args.bastionPrivateKey ?? args.privateKey,
                hostKey: args.bastion.hostKey,
            } : undefined,
        }));

        const partCommand = (part: Part, dependsOn: pulumi.Resource[]): command.remote.Command => {
            const bundle = rendered.bundles.find((b) => b.part === part)!;
            return new command.remote.Command(`${name}-${part}`, {
                connection,
                create: partCreateCommand(bundle, sudo),
                delete: partDeleteCommand(part, sudo),
                stdin: pulumi.output(tarFiles(bundle.files).then((t) => t.toString("base64"))),
                addPreviousOutputInEnv: false,
            }, { parent: this, dependsOn });
        };

        const base = partCommand("base", []);
        // With verifyWebhook the same command posts the connectivity test to the new webhook
        // before it takes the old one's place (remoteCommands.ts setWebhookCommand): a refusal,
        // or a "try later" while the host has a webhook, fails it and the host keeps the old
        // one; a "try later" on the first set only warns.
        const webhook = new command.remote.Command(`${name}-webhook`, {
            connection,
            create: setWebhookCommand(sudo, args.settings.verifyWebhook),
            // Rotation changes only this stdin: an in-place update that runs set-webhook again.
            stdin: pulumi.secret(pulumi.all([args.webhookUrl, args.chatFormat ?? "slack", args.pagerdutyRoutingKey])
                .apply(([url, format, key]) => webhookFileText(url, format, key))),
            logging: "none",
            addPreviousOutputInEnv: false,
        }, { parent: this, dependsOn: [base], additionalSecretOutputs: ["stdin", "stdout", "stderr"] });
        webhook.stdout.apply((out) => {
            if (typeof out === "string" && out.includes(WEBHOOK_CHECK_TRANSIENT)) {
                pulumi.log.warn("the connectivity test was not delivered (a transient failure: the chat service is down, "
                    + "slow or rate-limiting); the host had no webhook, so this one is set, and its alerts wait in the host's spool", webhook);
            }
        });
        if (args.heartbeatUrl !== undefined) {
            new command.remote.Command(`${name}-heartbeat`, {
                connection,
                create: setHeartbeatCommand(sudo),
                delete: removeHeartbeatCommand(sudo),
                stdin: pulumi.secret(pulumi.output(args.heartbeatUrl).apply(urlLine)),
                logging: "none",
                addPreviousOutputInEnv: false,
            }, { parent: this, dependsOn: [base], additionalSecretOutputs: ["stdin", "stdout", "stderr"] });
        }
        // The ban tool posts its start message on install, so the webhook goes first.
        for (const part of PARTS.filter((p) => p !== "base")) {
            partCommand(part, [base, webhook]);
        }

        this.files = pulumi.output(rendered.files.map((f): InstalledFile => ({
            part: f.part, path: f.path, destination: f.destination, sha256: f.sha256,
        })));
        this.partHashes = pulumi.output(Object.fromEntries(rendered.bundles.map((b) => [b.part, b.sha256])));
        this.registerOutputs({ files: this.files, partHashes: this.partHashes, jail: this.jail });
    }
}
