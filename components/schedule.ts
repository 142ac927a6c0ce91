// When a host's monitors run: every 10 minutes (the SPEC's schedule), shifted
// per host by an offset drawn once over the whole interval, minute AND second.
// A minute offset alone (0-9) puts a fleet of 100 hosts in 10 slots, about 10
// hosts posting in the same second; 600 one-second slots give about one post
// every 6 s, under the chat service's limit of one message per second. Cron
// has minute resolution, so the second is a `sleep` in front of the command
// (components/hostFiles.ts renders the cron file).
// Pure: no Pulumi runtime.

/** The SPEC's interval of both monitors, in seconds. */
export const INTERVAL_SECONDS = 600;

/** The cron minute (0-9) and the seconds slept after it (0-59) of an OFFSET (0-599). */
export function splitOffset(offset: number): { minute: number; second: number } {
    if (!Number.isInteger(offset) || offset < 0 || offset >= INTERVAL_SECONDS) {
        throw new Error(`monitor offset must be an integer 0-${INTERVAL_SECONDS - 1} seconds, got ${offset}`);
    }
    return { minute: Math.floor(offset / 60), second: offset % 60 };
}

/** The offset of a pinned cron minute (`hosts[].cronMinute`): on the minute. */
export function pinnedOffset(cronMinute: number): number {
    return cronMinute * 60;
}
