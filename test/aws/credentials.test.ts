// Issue 24 item 6: the dynamic resources' EC2 client honours aws:profile as
// the SDK reads it, role assumption included (role_arn with source_profile:
// the SDK calls STS AssumeRole, here moto's, reached through the same
// AWS_ENDPOINT_URL), and retries adaptively with 10 attempts.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { DescribeSecurityGroupsCommand } from "@aws-sdk/client-ec2";
import { ec2Client } from "../../components/ec2Reconcile";
import { REGION, startMoto, type Moto } from "./moto";

let moto: Moto;
let dir: string;

before(async () => {
    moto = await startMoto();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-aws-config-"));
});
after(async () => {
    await moto?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
});

describe("the EC2 client of the dynamic resources", () => {
    it("uses the named profile's credentials, and a profile's role through STS AssumeRole", async () => {
        const config = path.join(dir, "config");
        const credentials = path.join(dir, "credentials");
        fs.writeFileSync(credentials, "[base]\naws_access_key_id = AKIDPROFILEBASE000\naws_secret_access_key = base-secret\n");
        fs.writeFileSync(config, "[profile base]\nregion = us-east-1\n\n"
            + "[profile deployer]\nrole_arn = arn:aws:iam::123456789012:role/hostguard-deployer\nsource_profile = base\nrole_session_name = hostguard\n");
        const saved = { ...process.env };
        try {
            process.env.AWS_CONFIG_FILE = config;
            process.env.AWS_SHARED_CREDENTIALS_FILE = credentials;
            // The environment's keys (the tests' dummies) must not win over an explicit profile.
            const base = ec2Client(REGION, "base") as any;
            assert.equal((await base.config.credentials()).accessKeyId, "AKIDPROFILEBASE000");
            const assumed = ec2Client(REGION, "deployer") as any;
            const creds = await assumed.config.credentials();
            assert.notEqual(creds.accessKeyId, "AKIDPROFILEBASE000");
            assert.ok(creds.sessionToken, "temporary credentials from AssumeRole");
            const out = await assumed.send(new DescribeSecurityGroupsCommand({}));
            assert.ok(Array.isArray(out.SecurityGroups));
        } finally {
            for (const k of ["AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"]) {
                process.env[k] = saved[k];
            }
        }
    });

    it("retries adaptively, 10 attempts unless AWS_MAX_ATTEMPTS / AWS_RETRY_MODE say otherwise", async () => {
        const c = ec2Client(REGION) as any;
        assert.equal(await c.config.maxAttempts(), 10);
        assert.equal((await c.config.retryStrategy()).mode, "adaptive");
        process.env.AWS_MAX_ATTEMPTS = "3";
        try {
            assert.equal(await (ec2Client(REGION) as any).config.maxAttempts(), 3);
        } finally {
            delete process.env.AWS_MAX_ATTEMPTS;
        }
    });
});
