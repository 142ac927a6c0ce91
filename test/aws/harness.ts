// What the EC2 test files set up the same way, in one place: moto with an
// Account in it for the file's tests (started before them, stopped after),
// the fault proxy in front of it where a file or suite asks for it (its rule
// and the SDK's settings reset after each test), and the warnings the
// providers print, captured.
import { after, afterEach, before } from "node:test";
import { startFaultProxy, type FaultProxy } from "./faultProxy";
import { Account } from "./fixtures";
import { startMoto, useEndpoint, type Moto } from "./moto";

export interface Harness {
    moto: Moto;
    account: Account;
    /** Set by withFaultProxy only. */
    proxy: FaultProxy;
    /**
     * Settled once moto and the account are up. node:test starts a file's
     * top-level before hooks as they are registered, without waiting for the
     * one before: a later hook of the file that needs moto awaits this.
     */
    ready: Promise<void>;
}

/** moto and an Account for the calling file's tests: its before and after hooks. */
export function motoAccount(): Harness {
    let settle!: (e?: unknown) => void;
    const h = { ready: new Promise<void>((resolve, reject) => (settle = (e) => (e === undefined ? resolve() : reject(e)))) } as Harness;
    // A failed start fails the hook below; the promise's own rejection is not another error.
    h.ready.catch(() => undefined);
    before(async () => {
        try {
            h.moto = await startMoto();
            h.account = await Account.create(h.moto.client);
            settle();
        } catch (e) {
            settle(e ?? new Error("moto did not start"));
            throw e;
        }
    });
    after(async () => {
        await h.moto?.stop();
    });
    return h;
}

/**
 * The fault proxy in front of H's moto for the calling file or suite: started
 * before its tests, stopped after; after each test it forwards everything
 * again, and the SDK points at moto with its default retries and read-backs.
 */
export function withFaultProxy(h: Harness): void {
    before(async () => {
        await h.ready;
        h.proxy = await startFaultProxy(h.moto.endpoint);
    });
    afterEach(() => {
        h.proxy.rule = () => false;
        useEndpoint(h.moto.endpoint);
        delete process.env.AWS_MAX_ATTEMPTS;
        delete process.env.HOSTGUARD_READBACK_TRIES;
    });
    after(async () => {
        await h.proxy?.stop();
    });
}

/** Runs F with console.warn captured: its lines. */
export async function warningsOf(f: () => Promise<unknown>): Promise<string[]> {
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (m: string) => warnings.push(m);
    try {
        await f();
    } finally {
        console.warn = warn;
    }
    return warnings;
}
