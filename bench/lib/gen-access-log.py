#!/usr/bin/env python3
"""Writes a deterministic (seeded) nginx access log in the combined format
for the filter-throughput benchmark, and prints the counts the two filters
must find in it as one JSON object on stdout.

Usage: gen-access-log.py LINES OUT [SEED]

The mix is what a public web server sees: mostly GET 200/304 from browsers
and bots with long user agents, 3xx, 404 from scanners, a few 400 (some of
them TLS or binary junk on the plain port, with no method: nginx writes
those bytes as \\xNN) and 403 from the deny rule, 5xx; a fifth of the
clients are IPv6; now and then a Basic-auth user. Timestamps advance one
second every few lines, so the date parser sees real variation.

Expected counts (the SPEC's filter and the packaged one):
  project  = 400 or 403 lines whose request line has one of the SPEC's methods
  packaged = all 400 lines (any request line), never a 403
"""

import datetime
import json
import random
import sys

METHODS_SPEC = ["GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"]
METHOD_WEIGHTS = [80, 10, 4, 2, 2, 1, 1]
STATUSES = [200, 304, 301, 302, 404, 400, 403, 401, 500, 502, 206]
STATUS_WEIGHTS = [62, 8, 3, 2, 11, 3, 4, 2, 1, 1, 3]
PATHS = [
    "/", "/index.html", "/api/v1/orders", "/api/v1/orders/{n}", "/static/app.{n}.js",
    "/static/css/site.{n}.css", "/images/product-{n}.webp", "/login", "/logout",
    "/search?q=blue+shoes&page={n}", "/.env", "/.git/config", "/wp-login.php",
    "/backup.bak", "/config.old", "/.aws/credentials", "/robots.txt", "/favicon.ico",
    "/api/v1/users/{n}/settings?fields=name,email,locale&expand=roles",
]
USER_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.67",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.82 Mobile Safari/537.36",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.5.0",
    "python-requests/2.31.0",
    "Go-http-client/1.1",
    "Mozilla/5.0 zgrab/0.x",
    "-",
]
JUNK_REQUESTS = [
    "\\x16\\x03\\x01\\x00\\xF7\\x01\\x00\\x00\\xF3\\x03\\x03",
    "\\x00\\x00\\x00\\x00",
    "SSH-2.0-Go",
    "",
]


def ipv4(rng):
    return "%d.%d.%d.%d" % (rng.choice([23, 45, 66, 81, 103, 141, 185, 198, 203]),
                            rng.randrange(256), rng.randrange(256), rng.randrange(1, 255))


def ipv6(rng):
    return "2001:db8:%x:%x::%x" % (rng.randrange(65536), rng.randrange(65536),
                                   rng.randrange(1, 65536))


def main():
    lines = int(sys.argv[1])
    out = sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20240601
    rng = random.Random(seed)
    clients = [ipv6(rng) if rng.random() < 0.2 else ipv4(rng) for _ in range(3000)]
    when = datetime.datetime(2024, 6, 1, 0, 0, 0, tzinfo=datetime.timezone.utc)
    counts = {"lines": lines, "project": 0, "packaged": 0, "status400": 0,
              "status403": 0, "ipv6": 0, "junk": 0}
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for _ in range(lines):
            if rng.random() < 0.3:
                when += datetime.timedelta(seconds=1)
            ip = rng.choice(clients)
            status = rng.choices(STATUSES, STATUS_WEIGHTS)[0]
            has_method = True
            if status == 400 and rng.random() < 0.3:
                request = rng.choice(JUNK_REQUESTS)
                has_method = False
                counts["junk"] += 1
            else:
                method = rng.choices(METHODS_SPEC, METHOD_WEIGHTS)[0]
                path = rng.choice(PATHS).replace("{n}", str(rng.randrange(100000)))
                proto = rng.choice(["HTTP/1.1", "HTTP/1.1", "HTTP/2.0", "HTTP/1.0"])
                request = "%s %s %s" % (method, path, proto)
            user = "alice" if rng.random() < 0.02 else "-"
            size = 0 if status in (304, 204) else rng.randrange(150, 250000)
            referer = rng.choice(["-", "-", "https://www.example.com/", "https://shop.example.com/cart?step=2"])
            agent = rng.choice(USER_AGENTS)
            f.write('%s - %s [%s] "%s" %d %d "%s" "%s"\n' % (
                ip, user, when.strftime("%d/%b/%Y:%H:%M:%S +0000"), request, status,
                size, referer, agent))
            if ":" in ip:
                counts["ipv6"] += 1
            if status == 400:
                counts["status400"] += 1
                counts["packaged"] += 1
            if status == 403:
                counts["status403"] += 1
            if status in (400, 403) and has_method:
                counts["project"] += 1
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
