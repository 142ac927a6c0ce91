// An SSH public host key, parsed rather than matched: the base64 decodes, the
// key type inside the blob (RFC 4253 section 6.6, RFC 5656, RFC 8709) equals
// the label, and the key's length fits its type. A key that would only fail
// at SSH time, mid-deployment, is refused at preview with the reason. Pure.
import { RULES, ruleRegExp } from "./settings";

const ECDSA_POINT: Record<string, number> = { nistp256: 65, nistp384: 97, nistp521: 133 };

/** Reads the SSH wire format's length-prefixed strings. */
class Reader {
    private at = 0;
    constructor(private readonly buf: Buffer) {}
    string(): Buffer | null {
        if (this.at + 4 > this.buf.length) {
            return null;
        }
        const n = this.buf.readUInt32BE(this.at);
        if (this.at + 4 + n > this.buf.length) {
            return null;
        }
        const out = this.buf.subarray(this.at + 4, this.at + 4 + n);
        this.at += 4 + n;
        return out;
    }
    get done(): boolean {
        return this.at === this.buf.length;
    }
}

/** Bits of an SSH mpint (a positive one: a leading zero byte does not count). */
function mpintBits(b: Buffer): number {
    let i = 0;
    while (i < b.length && b[i] === 0) {
        i++;
    }
    return i === b.length ? 0 : (b.length - i - 1) * 8 + (32 - Math.clz32(b[i]));
}

/** Why TEXT is not a usable host key line (`TYPE BASE64`), in words; null when it is. */
export function hostKeyRefusal(text: string): string | null {
    const words = text.trim().split(/\s+/);
    if (/[\r\n]/.test(text.trim())) {
        return "must be one key on one line (`TYPE BASE64`), not several lines";
    }
    if (words.length >= 3 && /^(ssh-|ecdsa-)/.test(words[1]) && !/^(ssh-|ecdsa-)/.test(words[0])) {
        return `looks like an ssh-keyscan line: drop the host name ${JSON.stringify(words[0])} and keep \`TYPE BASE64\``;
    }
    if (words.length === 3 && /^(ssh-|ecdsa-)/.test(words[0])) {
        return "must be `TYPE BASE64` only: drop the comment after the key";
    }
    if (!ruleRegExp("hostKey").test(text)) {
        return `must be ${RULES.hostKey.allowed}`;
    }
    const [label, b64] = words;
    const blob = Buffer.from(b64, "base64");
    if (blob.toString("base64").replace(/=+$/, "") !== b64.replace(/=+$/, "")) {
        return "is not valid base64 (a character is missing or extra; copy the whole key)";
    }
    const r = new Reader(blob);
    const inner = r.string()?.toString("latin1");
    if (inner === undefined) {
        return "is cut short: the base64 holds no key type (copy the whole key)";
    }
    if (inner !== label) {
        return `is labelled ${label} but the key inside is ${JSON.stringify(inner)}: use the label the key was made with`;
    }
    if (label === "ssh-ed25519") {
        const k = r.string();
        if (!k || k.length !== 32 || !r.done) {
            return "is not a whole ssh-ed25519 key (it must hold exactly 32 key bytes; copy the whole key)";
        }
    } else if (label === "ssh-rsa") {
        const e = r.string();
        const n = r.string();
        if (!e || !n || !r.done) {
            return "is not a whole ssh-rsa key (copy the whole key)";
        }
        if (mpintBits(n) < 2048) {
            return `is an RSA key of ${mpintBits(n)} bits: at least 2048 are required (or use the server's ssh-ed25519 key)`;
        }
    } else {
        const curve = label.slice("ecdsa-sha2-".length);
        const c = r.string()?.toString("latin1");
        const q = r.string();
        if (c !== curve || !q || q.length !== ECDSA_POINT[curve] || q[0] !== 4 || !r.done) {
            return `is not a whole ${label} key (copy the whole key)`;
        }
    }
    return null;
}
