// Benchmark 10 (issue 11): how a fleet's monitor runs spread over the 10-minute
// interval. Each host derives its offset from its EC2 instance id
// (scripts/at-offset.sh, run by cron on every 10-minute mark): the bench runs
// the real script for fleets of random instance ids, in a private mount
// namespace where cloud-init's instance-id file holds each id in turn and a
// stand-in `sleep` prints the seconds asked for. The reference is the
// minute-only draw of earlier versions (every host posting on second 0 of one
// of 10 minutes). Needs root (unshare --mount). Prints one JSON object on stdout.
//   node --import tsx bench/lib/offsets.ts HOSTS FLEETS
import { execFileSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const SCRIPT = path.resolve(__dirname, "../../scripts/at-offset.sh");

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

/** The offsets at-offset.sh derives on hosts with these instance ids (one namespace, one id after another). */
function hostFleet(ids: string[], stub: string): number[] {
    const out = execFileSync("unshare", ["--mount", "--propagation", "private", "sh", "-c", [
        "mount -t tmpfs tmpfs /var/lib && mkdir -p /var/lib/cloud/data || exit 1",
        `PATH="${stub}:$PATH"`,
        "for id in $IDS; do printf '%s\\n' \"$id\" >/var/lib/cloud/data/instance-id; sh \"$SCRIPT\" true || exit 1; done",
    ].join("\n")], { env: { ...process.env, IDS: ids.join(" "), SCRIPT }, encoding: "utf8", timeout: 120_000 });
    return out.split("\n").filter((l) => l.startsWith("slept ")).map((l) => Number(l.slice(6)));
}

/** Earlier versions: RandomInteger 0-9, the minute; every host posts on its second 0. */
function referenceFleet(hosts: number): number[] {
    return Array.from({ length: hosts }, () => randomInt(0, 10) * 60);
}

function main(): void {
    const hosts = Number(process.argv[2] ?? 100);
    const fleets = Number(process.argv[3] ?? 50);
    const stub = fs.mkdtempSync(path.join(os.tmpdir(), "hg-bench-offsets-"));
    try {
        fs.writeFileSync(path.join(stub, "sleep"), "#!/bin/sh\necho \"slept $1\"\n", { mode: 0o755 });
        const program: number[] = [];
        const reference: number[] = [];
        let distinct = 0;
        for (let f = 0; f < fleets; f++) {
            const ids = Array.from({ length: hosts }, () => `i-${randomBytes(9).toString("hex").slice(0, 17)}`);
            const offsets = hostFleet(ids, stub);
            if (offsets.length !== hosts || offsets.some((o) => !Number.isInteger(o) || o < 0 || o > 599)) {
                throw new Error(`at-offset.sh gave ${offsets.length} offsets for ${hosts} hosts, or one outside 0-599: ${offsets.join(",")}`);
            }
            distinct += new Set(offsets).size;
            program.push(largestPerSecond(offsets));
            reference.push(largestPerSecond(referenceFleet(hosts)));
        }
        console.log(JSON.stringify({
            hosts, fleets,
            program: { median: median(program), worst: Math.max(...program) },
            reference: { median: median(reference), worst: Math.max(...reference) },
            meanDistinctSeconds: distinct / fleets,
            meanGapSeconds: 600 / hosts,
        }));
    } finally {
        fs.rmSync(stub, { recursive: true, force: true });
    }
}

main();
