"""A stand-in for AWS Systems Manager State Manager and the SSM agent (e2e, delivery ssm).

Run with the moto venv's python (boto3); driven by test/e2e/lib/fleet.sh.
moto (on the e2e lan, also at 169.254.169.254 as the hosts' instance
metadata) plays AWS; this plays the two parts moto has not:

  apply DIR       the calls @pulumi/aws would make for the program's fleet
                  (stdin: test/e2e/lib/fleet-program.ts's output; see
                  provider_calls.py); the association, which moto lacks,
                  kept in DIR/association.json as State Manager keeps it
  launch PROFILE [TAG]   an EC2 instance with the instance profile and, given,
                  the tag hostguard-stack=TAG; prints its id
  tag INSTANCE VALUE     tags it hostguard-stack=VALUE later
  dump DIR        the document, the association and every run output (JSON)
  tamper DIR PART PART's bundle object replaced by the base bundle's bytes
  run DIR INSTANCE=PID...  one execution of the association, as State Manager
                  runs it: the document as registered (GetDocument), the
                  association's parameters checked against its allowedPattern
                  (nothing runs when one fails), the targets resolved by tag
                  (DescribeInstances, running instances), on each the step's
                  aws:runShellScript lines with the parameters substituted,
                  written to _script.sh in the agent's orchestration folder
                  and run by sh as root inside that host's namespaces (the
                  host's init is PID; INSTANCE=PID pairs are the hosts whose
                  agent is registered), at most maxConcurrency at once and no
                  new target once more than maxErrors failed; stdout and stderr
                  uploaded under the association's S3 output location as the
                  agent lays them out. Prints one JSON object.
  uninstall DIR FILE INSTANCE=PID...  the Run Command of `pulumi destroy`
                  (components/fleetUninstall.ts): AWS-RunShellScript with
                  FILE's command, on each instance the association's tag
                  targets, one after the other, as the agent runs it (above).
                  Prints {"targets": {INSTANCE: {status, exit, stdout, stderr}}}.

What it cannot show: the real SSM agent (its registration, its environment,
its own credentials and upload; here the stand-in uploads the outputs with
its own), State Manager's scheduling (a run happens when the test calls
`run`, not on the schedule or when an instance registers), real KMS (moto
keeps SecureStrings in plain text) and IAM scoping (moto does not enforce
here; test/aws/fleet.test.ts does for S3). The one test-only setting the
step gets is HOSTGUARD_AWS_ENDPOINT (moto instead of https://s3.<region>...).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from provider_calls import REGION, apply, client

TAG = "hostguard-stack"
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ORCHESTRATION = "/var/lib/amazon/ssm/{instance}/document/orchestration/{command}/{step}"


# --- run: State Manager and the agent -------------------------------------------------


def check_parameters(document: dict[str, Any], params: dict[str, list[str]]) -> list[str]:
    """What State Manager refuses: an unknown or missing parameter, a value not matching allowedPattern."""
    declared = document.get("parameters", {})
    errors = [f"unknown parameter {k}" for k in sorted(set(params) - set(declared))]
    for name, spec in sorted(declared.items()):
        values = params.get(name, [spec["default"]] if "default" in spec else [])
        if len(values) != 1:
            errors.append(f"parameter {name}: {len(values)} values")
        elif "allowedPattern" in spec and not re.search(spec["allowedPattern"], values[0]):
            errors.append(f"parameter {name} does not match {spec['allowedPattern']}")
    return errors


def script(document: dict[str, Any], params: dict[str, list[str]]) -> tuple[str, str]:
    """The one aws:runShellScript step's name and its lines with {{ Name }} replaced."""
    steps = document["mainSteps"]
    if len(steps) != 1 or steps[0]["action"] != "aws:runShellScript":
        raise SystemExit("state_manager: the stand-in runs one aws:runShellScript step")
    text = "\n".join(steps[0]["inputs"]["runCommand"]) + "\n"

    def value(m: re.Match[str]) -> str:
        return params[m.group(1)][0] if m.group(1) in params else m.group(0)

    return steps[0]["name"], re.sub(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}", value, text)


def targets(request: dict[str, Any]) -> list[str]:
    (target,) = request["Targets"]
    filters = [
        {"Name": target["Key"], "Values": target["Values"]},
        {"Name": "instance-state-name", "Values": ["running"]},
    ]
    found = client("ec2").describe_instances(Filters=filters)["Reservations"]
    return sorted(i["InstanceId"] for r in found for i in r["Instances"])


def limit(value: str, total: int, least: int) -> int:
    """maxConcurrency / maxErrors: N, or N% of the targets (rounded down, at least LEAST)."""
    m = re.fullmatch(r"([0-9]+)(%?)", value)
    if not m:
        raise SystemExit(f"state_manager: bad rate value {value!r}")
    n = int(m.group(1))
    return max(least, total * n // 100) if m.group(2) else n


def in_host(
    pid: str, argv: list[str], stdin: bytes, env: dict[str, str], timeout: int
) -> subprocess.CompletedProcess[bytes]:
    enter = ["nsenter", "--target", pid, "--mount", "--net", "--uts", "--pid", "--"]
    envs = [f"{k}={v}" for k, v in sorted(env.items())]
    return subprocess.run(
        [*enter, "env", "-i", *envs, *argv], input=stdin, capture_output=True, timeout=timeout, check=False
    )


def invoke(pid: str, instance: str, command: str, step: str, text: str, timeout: int) -> tuple[int, bytes, bytes]:
    """As the agent: _script.sh in the orchestration folder (root-only), run by sh as root from there."""
    folder = ORCHESTRATION.format(instance=instance, command=command, step=step)
    env = {"PATH": HOST_PATH, "HOME": "/root", "LANG": "C.UTF-8"}
    write = 'umask 077 && mkdir -p "$1" && cat >"$1/_script.sh"'
    made = in_host(pid, ["sh", "-c", write, "_", folder], text.encode(), env, 60)
    if made.returncode != 0:
        return made.returncode, b"", made.stderr
    env.update(
        {
            "AWS_SSM_INSTANCE_ID": instance,
            "AWS_SSM_REGION_NAME": REGION,
            "HOSTGUARD_AWS_ENDPOINT": os.environ["HOSTGUARD_E2E_HOST_ENDPOINT"],
        }
    )
    try:
        done = in_host(pid, ["sh", "-c", 'cd "$1" && exec sh _script.sh', "_", folder], b"", env, timeout)
    except subprocess.TimeoutExpired:
        return 124, b"", b"timed out\n"
    return done.returncode, done.stdout, done.stderr


class Execution:
    """One execution of the association over its targets, within maxConcurrency and maxErrors."""

    def __init__(self, request: dict[str, Any], agents: dict[str, str], step: str, text: str, timeout: int):
        self.request, self.agents, self.step, self.text, self.timeout = request, agents, step, text, timeout
        self.command = str(uuid.uuid4())
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.results: dict[str, dict[str, Any]] = {}

    def one(self, instance: str) -> None:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            if instance not in self.agents:
                code, out, err = 1, b"", b"no SSM agent registered for this instance\n"
            else:
                code, out, err = invoke(
                    self.agents[instance], instance, self.command, self.step, self.text, self.timeout
                )
            self.upload(instance, out, err)
            status = "Success" if code == 0 else "Failed"
            self.results[instance] = {"status": status, "exit": code, "stdout": out.decode(), "stderr": err.decode()}
        finally:
            with self.lock:
                self.running -= 1

    def upload(self, instance: str, out: bytes, err: bytes) -> None:
        where = self.request["OutputLocation"]["S3Location"]
        prefix = f"{where['OutputS3KeyPrefix']}{self.command}/{instance}/awsrunShellScript/{self.step}/"
        s3 = client("s3")
        for name, data in (("stdout", out), ("stderr", err)):
            if data:
                s3.put_object(Bucket=where["OutputS3BucketName"], Key=prefix + name, Body=data)

    def run(self, instances: list[str]) -> None:
        concurrency = limit(self.request["MaxConcurrency"], len(instances), 1)
        max_errors = limit(self.request["MaxErrors"], len(instances), 0)
        pending = list(instances)
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            flying: set[Future[None]] = set()
            while pending or flying:
                failed = sum(r["status"] == "Failed" for r in self.results.values())
                while pending and len(flying) < concurrency and failed <= max_errors:
                    flying.add(pool.submit(self.one, pending.pop(0)))
                if not flying:
                    break
                done, flying = wait(flying, return_when=FIRST_COMPLETED)
                for f in done:
                    f.result()
        for instance in pending:
            self.results[instance] = {"status": "NotRun (maxErrors)", "exit": None, "stdout": "", "stderr": ""}


def run(state: str, pairs: list[str]) -> None:
    with open(os.path.join(state, "association.json"), encoding="utf-8") as f:
        association = json.load(f)
    request = association["request"]
    document = json.loads(client("ssm").get_document(Name=request["Name"])["Content"])
    refused = check_parameters(document, request["Parameters"])
    out: dict[str, Any] = {"associationVersion": association["version"], "refused": refused}
    if not refused:
        step, text = script(document, request["Parameters"])
        agents = dict(p.split("=", 1) for p in pairs)
        timeout = int(document["mainSteps"][0]["inputs"].get("timeoutSeconds", "3600"))
        execution = Execution(request, agents, step, text, timeout)
        execution.run(targets(request))
        statuses = [r["status"] for r in execution.results.values()]
        out.update(
            commandId=execution.command,
            peakConcurrency=execution.peak,
            status="Success" if statuses and all(s == "Success" for s in statuses) else "Failed",
            targets=execution.results,
        )
    print(json.dumps(out))


def uninstall(state: str, command_file: str, pairs: list[str]) -> None:
    with open(os.path.join(state, "association.json"), encoding="utf-8") as f:
        request = json.load(f)["request"]
    with open(command_file, encoding="utf-8") as f:
        text = f.read()
    agents = dict(p.split("=", 1) for p in pairs)
    command = str(uuid.uuid4())
    results: dict[str, dict[str, Any]] = {}
    for instance in targets(request):
        if instance not in agents:
            results[instance] = {"status": "Undeliverable", "exit": None, "stdout": "", "stderr": ""}
            continue
        code, out, err = invoke(agents[instance], instance, command, "0.awsrunShellScript", text, 600)
        status = "Success" if code == 0 else "Failed"
        results[instance] = {"status": status, "exit": code, "stdout": out.decode(), "stderr": err.decode()}
    print(json.dumps({"commandId": command, "targets": results}))


def dump(state: str) -> None:
    """What a reviewer of the account sees: the document, the association, every run output."""
    with open(os.path.join(state, "association.json"), encoding="utf-8") as f:
        request = json.load(f)["request"]
    where = request["OutputLocation"]["S3Location"]
    s3 = client("s3")
    listed = s3.list_objects_v2(Bucket=where["OutputS3BucketName"], Prefix=where["OutputS3KeyPrefix"])
    outputs = {
        o["Key"]: s3.get_object(Bucket=where["OutputS3BucketName"], Key=o["Key"])["Body"].read().decode()
        for o in listed.get("Contents", [])
    }
    document = client("ssm").get_document(Name=request["Name"])["Content"]
    print(json.dumps({"document": document, "association": request, "outputs": outputs}))


def tamper(state: str, part: str) -> None:
    """Replaces the bytes of PART's object (as the association names it) by the base bundle's: a valid tar."""
    with open(os.path.join(state, "association.json"), encoding="utf-8") as f:
        request = json.load(f)["request"]
    bucket = request["Parameters"]["Bucket"][0]
    shas = dict(w.split(":") for w in request["Parameters"]["Bundles"][0].split())
    s3 = client("s3")
    other = s3.get_object(Bucket=bucket, Key=f"bundles/base/{shas['base']}.tar")["Body"].read()
    s3.put_object(Bucket=bucket, Key=f"bundles/{part}/{shas[part]}.tar", Body=other)
    print(f"bundles/{part}/{shas[part]}.tar")


def main(argv: list[str]) -> int:
    if argv[:1] == ["apply"] and len(argv) == 2:
        apply(argv[1])
    elif argv[:1] == ["launch"] and len(argv) in (2, 3):
        tags = [{"ResourceType": "instance", "Tags": [{"Key": TAG, "Value": argv[2]}]}] if len(argv) == 3 else []
        launched = client("ec2").run_instances(
            ImageId="ami-12c6146b", MinCount=1, MaxCount=1, IamInstanceProfile={"Name": argv[1]}, TagSpecifications=tags
        )
        print(launched["Instances"][0]["InstanceId"])
    elif argv[:1] == ["tag"] and len(argv) == 3:
        client("ec2").create_tags(Resources=[argv[1]], Tags=[{"Key": TAG, "Value": argv[2]}])
    elif argv[:1] == ["dump"] and len(argv) == 2:
        dump(argv[1])
    elif argv[:1] == ["tamper"] and len(argv) == 3:
        tamper(argv[1], argv[2])
    elif argv[:1] == ["run"] and len(argv) >= 2:
        run(argv[1], argv[2:])
    elif argv[:1] == ["uninstall"] and len(argv) >= 3:
        uninstall(argv[1], argv[2], argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
