// moto's EC2 emulator for the tests: `moto_server` from the venv that
// tools/setup.bash installs (hg_setup_moto), started on a free loopback port
// as this process's child and killed in teardown. The AWS SDK reaches it
// through its standard settings (AWS_ENDPOINT_URL, dummy credentials), the
// same ones a user's endpoint would use: the code under test gets no endpoint.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { EC2Client } from "@aws-sdk/client-ec2";

export const MOTO_VENV = process.env.HOSTGUARD_MOTO_VENV
    ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "hostguard", "moto-venv");
export const REGION = "us-east-1";

async function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once("error", reject);
        s.listen(0, "127.0.0.1", () => {
            const port = (s.address() as net.AddressInfo).port;
            s.close(() => resolve(port));
        });
    });
}

async function answers(url: string): Promise<boolean> {
    try {
        await fetch(url, { signal: AbortSignal.timeout(1000) });
        return true;
    } catch {
        return false;
    }
}

export interface Moto {
    endpoint: string;
    /** A client of the emulator for the test's own set-up and checks. */
    client: EC2Client;
    stop(): Promise<void>;
}

/** The SDK's standard settings pointing at ENDPOINT, with dummy credentials (no real account is reachable). */
export function useEndpoint(endpoint: string): void {
    for (const k of ["AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_EC2", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"]) {
        delete process.env[k];
    }
    process.env.AWS_ENDPOINT_URL = endpoint;
    process.env.AWS_ACCESS_KEY_ID = "testing";
    process.env.AWS_SECRET_ACCESS_KEY = "testing";
    process.env.AWS_REGION = REGION;
    // No shared config of this machine's user reaches the tests.
    process.env.AWS_CONFIG_FILE = "/dev/null";
    process.env.AWS_SHARED_CREDENTIALS_FILE = "/dev/null";
}

export async function startMoto(): Promise<Moto> {
    const bin = path.join(MOTO_VENV, "bin", "moto_server");
    if (!fs.existsSync(bin)) {
        throw new Error(`${bin} is missing: run \`source tools/setup.bash && hg_setup_moto\` (npm test does)`);
    }
    const port = await freePort();
    const endpoint = `http://127.0.0.1:${port}`;
    let output = "";
    const child: ChildProcess = spawn(bin, ["-H", "127.0.0.1", "-p", String(port)], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const stop = async () => {
        if (child.exitCode === null && child.signalCode === null) {
            child.kill("SIGTERM");
            await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
            if (child.exitCode === null && child.signalCode === null) {
                child.kill("SIGKILL");
                await exited;
            }
        }
    };
    for (let i = 0; i < 300 && !(await answers(`${endpoint}/moto-api/`)); i++) {
        if (child.exitCode !== null) {
            throw new Error(`moto_server exited with ${child.exitCode}: ${output}`);
        }
        await new Promise((r) => setTimeout(r, 100));
    }
    if (!(await answers(`${endpoint}/moto-api/`))) {
        await stop();
        throw new Error(`moto_server did not answer on ${endpoint} within 30 s: ${output}`);
    }
    useEndpoint(endpoint);
    return { endpoint, client: new EC2Client({ region: REGION }), stop };
}
