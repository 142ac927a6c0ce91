// What the Pulumi program asks of AWS for a fleet (hostguard:delivery ssm),
// for the State Manager stand-in of the end-to-end suite (lib/fleet.sh,
// lib/state_manager.py). The @pulumi/aws plugin cannot be had on the
// development machine, so the program itself (PROGRAM_DIR/index.ts, the
// entry point `pulumi up` runs) runs under pulumi.runtime.setMocks, and every
// @pulumi/aws resource it registers is printed with its inputs, resolved and
// unwrapped (the webhook parameter's secret value among them): the same
// values the provider would send. state_manager.py makes those calls against
// moto. The mocks answer as the provider would: auto-named physical names
// (fixed here: <resource name>-e2e), ARNs, and the parameter's version as 0,
// which state_manager.py replaces with moto's, as the engine passes the
// provider's output to the association.
//
// Usage: node --import tsx fleet-program.ts PROGRAM_DIR STACK_FILE STACK [KEY=VALUE...]
//   PROGRAM_DIR  a copy of the program (index.ts, components/, scripts/)
//   STACK_FILE   a Pulumi.<stack>.yaml whose hostguard:* settings the fleet
//                takes (those an SSH stack alone has are left out: hosts,
//                sshPrivateKey, cronMinute, aws; delivery ssm and aws true set)
//   STACK        the stack's name (the tag's value, the parameter prefix)
//   KEY=VALUE    more hostguard:KEY settings (fleetMaxErrors=100%, ...)
// Also writes PROGRAM_DIR/Pulumi.<STACK>.yaml with the same settings but the
// webhook (the copy's stack file, for `npm run render` on the fleet: lib/fleet.sh).
// Stdin: the webhook URL (one line; it never reaches argv). Stdout: one JSON
// array of {type, name, inputs}; nothing else goes there.
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import * as yaml from "js-yaml";

const SSH_ONLY = new Set(["hosts", "sshPrivateKey", "sshUser", "cronMinute", "aws", "bastion", "bastionPrivateKey"]);

interface Recorded { type: string; name: string; inputs: Record<string, unknown> }

/** Each resource type's outputs as the provider would answer them (the rest echo the inputs). */
function outputs(type: string, name: string, inputs: Record<string, unknown>): Record<string, unknown> {
    const physical = `${name}-e2e`;
    switch (type) {
    case "aws:s3/bucket:Bucket": return { bucket: physical, arn: `arn:aws:s3:::${physical}` };
    case "aws:kms/key:Key": return { keyId: physical, arn: `arn:aws:kms:us-east-1:123456789012:key/${physical}` };
    case "aws:ssm/parameter:Parameter": return { version: 0, arn: `arn:aws:ssm:us-east-1:123456789012:parameter${String(inputs.name)}` };
    case "aws:iam/role:Role": return { name: physical, arn: `arn:aws:iam::123456789012:role/${physical}` };
    case "aws:iam/instanceProfile:InstanceProfile": return { name: physical, arn: `arn:aws:iam::123456789012:instance-profile/${physical}` };
    case "aws:iam/policy:Policy": return { name: physical, arn: `arn:aws:iam::123456789012:policy/${physical}` };
    case "aws:ssm/document:Document": return { name: physical };
    case "aws:ssm/association:Association": return { associationId: `${physical}-id` };
    default: return {};
    }
}

/** A secret's value as the mock sees it: { 4dabf18193072939515e22adb298388d: ..., value } → value. */
function plain(v: unknown): unknown {
    if (Array.isArray(v)) {
        return v.map(plain);
    }
    if (v && typeof v === "object") {
        const o = v as Record<string, unknown>;
        if ("4dabf18193072939515e22adb298388d" in o) {
            return plain(o.value);
        }
        return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, plain(x)]));
    }
    return v;
}

async function main(argv: string[]): Promise<void> {
    const [programDir, stackFile, stack, ...extra] = argv;
    if (!programDir || !stackFile || !stack) {
        throw new Error("usage: fleet-program.ts PROGRAM_DIR STACK_FILE STACK [KEY=VALUE...] <webhook-url");
    }
    const webhookUrl = fs.readFileSync(0, "utf8").trim();
    const doc = yaml.load(fs.readFileSync(stackFile, "utf8")) as { config?: Record<string, unknown> };
    const config: Record<string, string> = {};
    const fileConfig: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(doc.config ?? {})) {
        const key = k.replace(/^hostguard:/, "");
        // A `secure:` value is the SSH stack's own secret (its key); the webhook comes on stdin.
        const secure = typeof v === "object" && v !== null && "secure" in v;
        if (k.startsWith("hostguard:") && !SSH_ONLY.has(key) && !secure) {
            config[k] = typeof v === "string" ? v : JSON.stringify(v);
            fileConfig[k] = v;
        }
    }
    Object.assign(config, {
        "hostguard:delivery": "ssm", "hostguard:aws": "true", "hostguard:vpcId": "vpc-0e2e0000000000001", "hostguard:webhookUrl": webhookUrl, "aws:region": "us-east-1",
        // moto's account; moto keeps the boundary on the role and does not enforce it (docs/aws.md, Fleet path: an administrator creates it).
        "hostguard:fleetPermissionsBoundary": "arn:aws:iam::123456789012:policy/hostguard-boundary-e2e",
    });
    for (const kv of extra) {
        const at = kv.indexOf("=");
        config[`hostguard:${kv.slice(0, at)}`] = kv.slice(at + 1);
    }
    for (const [k, v] of Object.entries(config)) {
        if (!(k in fileConfig) && k !== "hostguard:webhookUrl") {
            fileConfig[k] = v;
        }
    }
    fs.writeFileSync(path.join(programDir, `Pulumi.${stack}.yaml`), yaml.dump({ config: fileConfig }));

    const recorded: Recorded[] = [];
    await pulumi.runtime.setMocks({
        newResource(args) {
            recorded.push({ type: args.type, name: args.name, inputs: args.inputs });
            return { id: `${args.name}-e2e`, state: { ...args.inputs, ...outputs(args.type, args.name, args.inputs) } };
        },
        call(args) {
            throw new Error(`the program made a call the stand-in does not know: ${args.token}`);
        },
    }, "hostguard", stack, false);
    pulumi.runtime.setAllConfig(config, ["hostguard:webhookUrl"]);
    const program = await import(path.resolve(programDir, "index.ts")) as { fleet?: { associationId: pulumi.Output<string>; hostPolicyArn: pulumi.Output<string> } };
    if (!program.fleet) {
        throw new Error(`${programDir}/index.ts exported no fleet: not delivery ssm?`);
    }
    await new Promise((resolve) => pulumi.all([program.fleet!.associationId, program.fleet!.hostPolicyArn]).apply(resolve));
    // The registrations still in flight (the last resources' inputs resolve after the outputs above).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const aws = recorded.filter((r) => r.type.startsWith("aws:")).map((r) => ({ ...r, inputs: plain(r.inputs) }));
    process.stdout.write(`${JSON.stringify(aws)}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`fleet-program: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
});
