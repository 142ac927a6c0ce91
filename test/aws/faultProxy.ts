// A fault-injecting endpoint for the EC2 tests: a small HTTP proxy on
// loopback in front of moto that forwards every request, except those the
// test's rule picks. The code under test reaches it through AWS_ENDPOINT_URL
// like any endpoint. The faults, as a real account gives them:
// - "throttle": not forwarded; EC2's throttling answer (HTTP 503, RequestLimitExceeded);
// - "lose": forwarded (EC2 applies it), then the same 503 instead of moto's
//   answer: a change whose answer was lost (the SDK retries it; EC2 refuses
//   the retry of an authorize as InvalidPermission.Duplicate);
// - "hold": forwarded (applied), then no answer at all (the test then kills the
//   process that sent it, as a kill -9 of `pulumi up` would).
import * as http from "node:http";
import type { AddressInfo } from "node:net";

export type Fault = "throttle" | "lose" | "hold";

/** Decides per request: a fault, or false to forward it (true means "throttle"). N counts the requests of that action so far (1-based). */
export type FaultRule = (action: string, n: number) => Fault | boolean;

export interface FaultProxy {
    endpoint: string;
    /** Actions in the order they arrived, faults marked with a leading "!". */
    calls: string[];
    /** Replaces the rule (the default forwards everything). */
    rule: FaultRule;
    stop(): Promise<void>;
}

const THROTTLED = '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>RequestLimitExceeded</Code>'
    + "<Message>Request limit exceeded.</Message></Error></Errors><RequestID>fault-proxy</RequestID></Response>";

export async function startFaultProxy(target: string): Promise<FaultProxy> {
    const counts = new Map<string, number>();
    const proxy: FaultProxy = { endpoint: "", calls: [], rule: () => false, stop: async () => {} };
    const server = http.createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const c of req) {
            chunks.push(c as Buffer);
        }
        const body = Buffer.concat(chunks);
        const action = new URLSearchParams(body.toString("utf8")).get("Action") ?? "?";
        const n = (counts.get(action) ?? 0) + 1;
        counts.set(action, n);
        const fault = proxy.rule(action, n);
        const kind: Fault | false = fault === true ? "throttle" : fault;
        proxy.calls.push(kind ? `!${action}` : action);
        if (kind === "throttle") {
            res.writeHead(503, { "content-type": "text/xml" }).end(THROTTLED);
            return;
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) {
            if (typeof v === "string" && !["host", "content-length", "connection"].includes(k)) {
                headers[k] = v;
            }
        }
        const up = await fetch(`${target}${req.url}`, { method: req.method, headers, ...(body.length > 0 ? { body } : {}) });
        const text = Buffer.from(await up.arrayBuffer());
        if (kind === "lose") {
            res.writeHead(503, { "content-type": "text/xml" }).end(THROTTLED);
        } else if (kind !== "hold") {
            res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "text/xml" }).end(text);
        }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    proxy.stop = () => new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
    });
    return proxy;
}
