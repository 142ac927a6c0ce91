// A render error of a host (a bad files.table row, a payload file no part
// ships) is a pulumi.ResourceError on the host's component, thrown before any
// child exists: the engine reports it on that resource, with the table's line
// and no stack trace, and no remote command is registered for the host.
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { payloadFile, type PayloadFile } from "../../components/bundles";
import { DEFAULT_SETTINGS, type TargetHost } from "../../components/config";
import { HostDeployment } from "../../components/hostDeployment";

const HOST: TargetHost = {
    name: "web1", host: "10.0.1.10", port: 22, user: "root",
    hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyFake0000000000000000000000000000000A",
};
const TABLE = "base install /usr/local/lib/hostguard/install 0755\nbase files.table /usr/local/lib/hostguard/files.table 0644\n"
    + "base hostguard.conf /etc/hostguard/hostguard.conf 0644\n";
const INSTALL = payloadFile("install", "#!/usr/bin/env bash\n", 0o755);

/** Types of the resources registered, in order. */
let registered: string[] = [];

before(async () => {
    await pulumi.runtime.setMocks({
        newResource(args) {
            registered.push(args.type);
            return { id: `${args.name}-id`, state: args.inputs };
        },
        call(args) {
            throw new Error(`unexpected call ${args.token}`);
        },
    }, "hostguard", "test", false);
});

/** The error deploying this payload to web1 throws, or undefined. */
function deployError(payload: PayloadFile[]): unknown {
    registered = [];
    try {
        new HostDeployment("web1", {
            host: HOST, settings: DEFAULT_SETTINGS, privateKey: "KEY", webhookUrl: "https://hooks.example.test/x", payload,
        });
    } catch (e) {
        return e;
    }
    return undefined;
}

/** Asserts a ResourceError on web1's HostDeployment, with MESSAGE, its stack hidden, and no child registered. */
async function assertOnHost(error: unknown, message: string | RegExp): Promise<void> {
    assert.ok(pulumi.ResourceError.isInstance(error), `not a ResourceError: ${String(error)}`);
    assert.ok(error.resource instanceof HostDeployment);
    assert.match(await new Promise<string>((r) => error.resource!.urn.apply(r)), /::hostguard:host:HostDeployment::web1$/);
    assert.equal(error.hideStack, true);
    if (typeof message === "string") {
        assert.equal(error.message, message);
    } else {
        assert.match(error.message, message);
    }
    assert.deepEqual(registered, ["hostguard:host:HostDeployment"]);
}

describe("render errors of a host", () => {
    it("a bad table row: on the host's component, naming the table line, before any child", async () => {
        const error = deployError([
            INSTALL, payloadFile("files.table", `${TABLE}web nginx/deny.conf /etc/nginx/deny.conf 0600\n`), payloadFile("nginx/deny.conf", "x\n"),
        ]);
        await assertOnHost(error, /^files\.table:4: expected PART SOURCE DESTINATION MODE/);
    });

    it("a payload file no part ships: the same", async () => {
        const error = deployError([INSTALL, payloadFile("files.table", TABLE), payloadFile("stray.sh", "x\n")]);
        await assertOnHost(error, "scripts/stray.sh is in no part: add it to scripts/files.table");
    });

    it("a good payload deploys: the base command and the rest are registered", async () => {
        assert.equal(deployError([INSTALL, payloadFile("files.table", TABLE)]), undefined);
        await new Promise((r) => setTimeout(r, 50));
        assert.ok(registered.includes("command:remote:Command"), registered.join(", "));
    });
});
