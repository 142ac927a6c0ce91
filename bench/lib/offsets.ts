// Benchmark 10 (issue 11): how a fleet's monitor runs spread over the 10-minute
// interval. The Pulumi program itself draws the offsets: buildStack runs under
// pulumi.runtime.setMocks, and each RandomInteger it registers gets a uniform
// draw over the range the program asked for (what the random provider does),
// kept as the resource's result; the offset is read back from the host's
// cronOffset output. The reference is the minute-only draw of earlier versions
// (RandomInteger 0-9, every host posting on second 0 of its minute).
// Prints one JSON object on stdout.
//   node --import tsx bench/lib/offsets.ts HOSTS FLEETS
import { randomInt } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { validateConfig, type RawConfig } from "../../components/config";
import { payloadFile } from "../../components/bundles";
import { buildStack, rawStackConfig, stackSecretKeys } from "../../components/stack";

const TABLE = [
    "base install /usr/local/lib/hostguard/install 0755", "base files.table /usr/local/lib/hostguard/files.table 0644",
    "base hostguard.conf /etc/hostguard/hostguard.conf 0644", "base hostguard/*.py /usr/local/lib/hostguard/hostguard/ 0644", "monitors cron.d/hostguard /etc/cron.d/hostguard 0644",
    "bantool fail2ban/jail.d/hostguard-nginx-bad-request.local /etc/fail2ban/jail.d/hostguard-nginx-bad-request.local 0644", "",
].join("\n");
/** A tiny payload: the bench measures the draw, not the tar of scripts/. */
const PAYLOAD = [payloadFile("install", "#!/bin/sh\n", 0o755), payloadFile("files.table", TABLE), payloadFile("hostguard/paths.py", "#\n")];
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nbench\n-----END OPENSSH PRIVATE KEY-----\n";
/** Host keys are required (issue 12); the mocks never dial, so any well-formed key does. */
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchHostKey000000000000000000000000000000A";

/** The largest number of hosts that post in the same second. */
function largestPerSecond(seconds: number[]): number {
    const count = new Map<number, number>();
    for (const s of seconds) {
        count.set(s, (count.get(s) ?? 0) + 1);
    }
    return Math.max(...count.values());
}

function median(values: number[]): number {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)];
}

async function programFleet(hosts: number): Promise<number[]> {
    const raw: RawConfig = {
        hosts: JSON.stringify(Array.from({ length: hosts }, (_, i) => ({ name: `h${i}`, host: `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`, hostKey: HOST_KEY }))),
        aws: "false", webhookUrl: "https://hooks.example.test/bench", sshPrivateKey: KEY,
    };
    pulumi.runtime.setAllConfig(Object.fromEntries(Object.entries(raw).map(([k, v]) => [`hostguard:${k}`, String(v)])),
        ["hostguard:webhookUrl", "hostguard:sshPrivateKey"]);
    const out = buildStack(validateConfig(rawStackConfig(), { secretKeys: stackSecretKeys() }), PAYLOAD);
    return Promise.all(Object.values(out.hosts).map((h) => new Promise<number>((r) => h.cronOffset.apply(r))));
}

/** Earlier versions: RandomInteger 0-9, the minute; every host posts on its second 0. */
function referenceFleet(hosts: number): number[] {
    return Array.from({ length: hosts }, () => randomInt(0, 10) * 60);
}

async function main(): Promise<void> {
    const hosts = Number(process.argv[2] ?? 100);
    const fleets = Number(process.argv[3] ?? 50);
    const ranges = new Set<string>();
    await pulumi.runtime.setMocks({
        newResource(args) {
            if (args.type === "random:index/randomInteger:RandomInteger") {
                ranges.add(`${args.inputs.min}-${args.inputs.max}`);
                return { id: `${args.name}-id`, state: { ...args.inputs, result: randomInt(args.inputs.min, args.inputs.max + 1) } };
            }
            return { id: `${args.name}-id`, state: args.inputs };
        },
        call() {
            throw new Error("no provider calls expected");
        },
    }, "hostguard", "bench", false);
    const program: number[] = [];
    const reference: number[] = [];
    let distinct = 0;
    for (let f = 0; f < fleets; f++) {
        const offsets = await programFleet(hosts);
        if (offsets.some((o) => !Number.isInteger(o) || o < 0 || o > 599)) {
            throw new Error(`an offset outside 0-599: ${offsets.join(",")}`);
        }
        distinct += new Set(offsets).size;
        program.push(largestPerSecond(offsets));
        reference.push(largestPerSecond(referenceFleet(hosts)));
    }
    console.log(JSON.stringify({
        hosts, fleets, ranges: [...ranges],
        program: { median: median(program), worst: Math.max(...program) },
        reference: { median: median(reference), worst: Math.max(...reference) },
        meanDistinctSeconds: distinct / fleets,
        meanGapSeconds: 600 / hosts,
    }));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
