"""hostguard.install.nginxconf on its own (was test/payload/nginx-conf.bats): which blocks are the http
context's server blocks under nginx's tokenizing rules, the null location, and that removing the
include is the exact inverse of adding it (every byte back; adding twice is adding once). Accepted
and refused texts are also checked with the real `nginx -t` where this machine has nginx."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hostguard.install import nginxconf as nc

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


def nginx_accepts(tmp: Path, text: bytes) -> bool:
    """nginx -t on TEXT as the content of http {} (the snippet path pointed at a test copy)."""
    if NGINX is None:
        pytest.skip("nginx missing (.ci/run installs it)")
    snippet = tmp / "deny.conf"
    snippet.write_text('if ($uri ~ "/x$") { return 403; }\n')
    (tmp / "site").write_bytes(text.replace(nc.SNIPPET.encode(), str(snippet).encode()))
    (tmp / "nginx.conf").write_text(
        f"pid {tmp}/pid;\nerror_log {tmp}/error.log;\nevents {{}}\nhttp {{\naccess_log off;\ninclude {tmp}/site;\n}}\n"
    )
    run = subprocess.run(
        [NGINX, "-t", "-q", "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e", str(tmp / "error.log")],
        capture_output=True,
        check=False,
        timeout=30,
    )
    return run.returncode == 0


def round_trip(tmp: Path, text: str, want: int) -> bytes:
    data = text.encode("latin-1")
    added, count, _ = nc.add_include(data, "0123abcd01234567")
    assert count == want, added.decode("latin-1")
    assert nginx_accepts(tmp, added), added.decode("latin-1")
    twice, again, _ = nc.add_include(added, "4567cdef01234567")
    assert again == 0
    assert twice == added
    removed, taken = nc.remove_include(added, "0123abcd01234567")
    assert taken == want
    assert removed == data
    return added


CASES = [
    ("server {\n    listen 8001;\n}\n", 1),
    ("server\n{\n    listen 8001;\n}", 1),
    ("server{listen 8001;}", 1),
    ("server { # a comment { with braces }\n    listen 8001;\n}\n", 1),
    ("server {\r\n    listen 8001;\r\n}\r\n", 1),
    ('server { listen 8001; location / { return 200 "a \\" { b"; } }\nserver { listen 8002; }\n', 3),
    ("server {\n    listen 8001;\n    set $a \"${uri}x\";\n    return 200 '}';\n}\n", 1),
    ("upstream u { server 127.0.0.1:1; }\nserver { listen 8001; location / { proxy_pass http://u; } }\n", 2),
    ("map $uri $m { default 0; server 1; }\nserver { listen 8001; }\n", 1),
    ("server { listen 8001; server_name a#b; }\n", 1),
    ("# server { listen 1; }\nserver { listen 8001; }  # trailing\n", 1),
    (f"server {{\n    include {nc.SNIPPET};\n    listen 8001;\n}}\nserver {{ listen 8002; }}\n", 1),
    # A } inside a word is part of it; `${` keeps its brace; quotes mid-word are plain; a quoted keyword is the keyword.
    ("server {\n    add_header X-A a}b;\n    add_header X-B x}}x} always;\n}\n", 1),
    ("server { add_header X-C ${host}}; add_header X-D a\"b'c; }\n", 1),
    ("\"server\" { listen 8001; }\n'server'\n{ listen 8002; }\n", 2),
    ('server {\n    return 200 "line one }\n    line two {\n";\n}\nserver { listen 8002; }\n', 2),
    ("server {\n    if ($uri = \"/x\") { return 204; }\n    if ($host ~* '^a}') { return 204; }\n}\n", 1),
    ("server { add_header X-L " + "x" * 700 + '}; add_header X-M "' + "x" * 700 + '\\"}{;"; }\n', 1),
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_blocks_by_structure_every_byte_back(tmp_path: Path, text: str, want: int) -> None:
    round_trip(tmp_path, text, want)


@pytest.mark.parametrize(
    "text",
    ["server { add_header X a{b; }", 'server { return 200 "a"}; }', "server { listen 1; }}", 'server { set $a "x"y; }'],
)
def test_refused_as_nginx_refuses(tmp_path: Path, text: str) -> None:
    with pytest.raises(nc.ConfError, match=r"^line \d+: "):
        nc.add_include(text.encode(), "0")
    assert not nginx_accepts(tmp_path, text.encode())


@pytest.mark.parametrize(
    "text",
    [
        "server {\n listen 1;\n",
        "server { listen 1 }",
        "}\n",
        'server { return 200 "x; }',
        ";",
        "server { location ~ ^/a{1,2}$ { return 204; } }",
        'server { return 200 "a"b; }',
        "server { listen 1; \\",
    ],
)
def test_refused_with_its_line(text: str) -> None:
    with pytest.raises(nc.ConfError, match=r"^line \d+: "):
        nc.scan(text + "\n")


def test_stream_and_upstream_servers_are_left_alone() -> None:
    assert nc.scan("stream { server { listen 1; proxy_pass a:1; } }\n").blocks == []
    main = nc.scan("events {}\nhttp { server { listen 1; } include sites/*; }\nstream { server { listen 2; } }\n")
    assert main.ctx == "main"
    assert [b.kind for b in main.blocks] == ["S"]
    assert main.includes == [(2, "http", "sites/*")]


def test_every_byte_goes_through(tmp_path: Path) -> None:
    data = (
        b"server { # every byte but the newline:"
        + bytes(b for b in range(256) if b != 10)
        + b"\r\n    listen 8001;\r\n}\r\nserver { listen 8002; } # \0 and no newline at the end"
    )
    added, count, _ = nc.add_include(data, "0123abcd01234567")
    assert count == 2
    assert added.count(b"line split") == 1
    removed, taken = nc.remove_include(added, "0123abcd01234567")
    assert (removed, taken) == (data, 2)
    assert nginx_accepts(tmp_path, added)


def test_remove_takes_only_the_token_lines() -> None:
    site = (
        "\n".join(
            [
                "server {",
                "    include /etc/nginx/snippets/hostguard-deny.conf; # hostguard",
                "    listen 8001;",
                "}",
                "server {",
                "    include /etc/nginx/snippets/hostguard-deny.conf; # hostguard 1111111111111111",
                "    listen 8002;",
                "    location / {",
                "        include /etc/nginx/snippets/hostguard-deny.conf; # hostguard 2222222222222222 (location)",
                "        return 204;",
                "    }",
                "}",
            ]
        )
        + "\n"
    ).encode()
    one, n = nc.remove_include(site, "2222222222222222")
    assert n == 1
    assert one.count(b"# hostguard") == 2
    assert b"2222222222222222" not in one
    two, n = nc.remove_include(one, "")
    assert n == 1
    assert two.count(b"# hostguard") == 1
    assert b"# hostguard 1111111111111111\n" in two


NULL_SHAPES = [
    "server { listen 1; location /r/ { rewrite ^/r/(.*)$ /$1 last; } }\n",
    "server { listen 1; location /w/ { rewrite ^/w/(.*)$ /$1; } location = /x { return 204; } }\n",
    "server { listen 1; rewrite ^/s/(.*)$ /$1; location ~ \\.php$ { return 204; } }\n",
    "server { listen 1; rewrite ^/s/(.*)$ /$1 break; }\n",
    "server { listen 1; if ($host = a) { rewrite ^ /x last; } }\n",
]


@pytest.mark.parametrize("text", NULL_SHAPES)
def test_null_location_gets_a_catch_all(tmp_path: Path, text: str) -> None:
    added = round_trip(tmp_path, text, len(nc.scan(text).blocks) + 1)
    assert added.count(b"(null location)") == 1
    assert nc.scan(added.decode("latin-1")).null_locations() == []


@pytest.mark.parametrize(
    "text",
    [
        # A catch-all is there, or nothing routes: nothing to add.
        "server { listen 1; location / { rewrite ^/r/(.*)$ /$1 last; } }\n",
        "server { listen 1; location ^~ / { } location /r/ { rewrite ^ /x last; } }\n",
        "server { listen 1; location /r/ { rewrite ^/r/(.*)$ /$1 break; } }\n",
        "server { listen 1; location /r/ { rewrite ^/r/(.*)$ /$1 permanent; } }\n",
        "server { listen 1; location /r/ { return 204; } }\n",
    ],
)
def test_no_null_location_needed(text: str) -> None:
    added, _, _ = nc.add_include(text.encode(), "0123abcd01234567")
    assert b"null location" not in added


def test_null_location_with_foreign_include_is_a_warning() -> None:
    text = "server {\n  listen 1;\n  include locs/*.conf;\n  location /r/ {\n    rewrite ^ /x last;\n  }\n}\n"
    added, _, result = nc.add_include(text.encode(), "0123abcd01234567")
    assert b"null location" not in added
    assert [line for line, _ in result.warnings] == [5]
    assert "no catch-all `location /` was added" in result.warnings[0][1]


def test_warnings_break_and_try_files() -> None:
    text = (
        "server {\n location /d/ {\n  rewrite ^ /y break;\n }\n location / {\n"
        "  try_files $uri $uri.bak $uri/ =404;\n  try_files $uri $uri.html $uri/ =404;\n }\n}\n"
    )
    assert [(line, w.split(" serves")[0]) for line, w in nc.scan(text).warnings] == [
        (3, "this rewrite ... break"),
        (6, "this try_files"),
    ]


def test_token_depends_on_path_and_content() -> None:
    assert nc.token("/a", b"x") != nc.token("/b", b"x")
    assert nc.token("/a", b"x") != nc.token("/a", b"y")
    assert len(nc.token("/a", b"")) == 16
