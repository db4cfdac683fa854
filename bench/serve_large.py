#!/usr/bin/python3
"""The 10,000-item `serve` rows of `make bench`: keychain-cli serve against gnome-keyring, each
holding the same BENCH_LARGE_ITEMS items of one service.

gnome-keyring holds them two ways, in two daemons of their own:
- loaded from a keyring file (bench/large.py writes it in gnome-keyring's plain-text format before
  the daemon starts; storing 10,000 items through D-Bus would take it half an hour):

    BENCH_LARGE_ITEMS=10000 KEYCHAIN_PRIVATE_KEYRING=1 \\
        KEYCHAIN_KEYRING_SETUP="bench/large.py --write-keyring" \\
        scripts/with-keyring bench/serve_large.py OUT.json

- created through D-Bus in its session collection, which it keeps in memory only (this script
  runs itself again in a second private session for that, with `--session-collection`).

serve holds them in a vault (imported in one write). The same `secret-tool lookup` runs against
each, interleaved, its bus chosen by DBUS_SESSION_BUS_ADDRESS. After the lookups each provider's
VmHWM (peak) and VmRSS are read from /proc, and serve's resident memory is split by mapping
(/proc/PID/smaps). Writes OUT.json."""
import json, os, statistics, subprocess, sys, tempfile

from common import KC, RUNS, measure
from large import COLLECTION, ITEMS, SERVICE
from serve import Served, vault_of

LAST = f"key-{ITEMS:05d}"
LOOKUP = ["secret-tool", "lookup", "service", SERVICE, "username", LAST]


def memory(pid):
    """{VmHWM, VmRSS} of `pid`, in MiB."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return {name: int(fields[name].split()[0]) / 1024 for name in ("VmHWM", "VmRSS")}


def resident_by_mapping(pid, binary):
    """serve's resident memory in MiB, by what it maps: its binary, shared libraries, the heap
    (brk), other anonymous memory (malloc's arenas of other threads, stacks), and the rest."""
    parts = {"binary": 0, "libraries": 0, "heap": 0, "anonymous": 0, "other": 0}
    name = "other"
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                path = fields[5] if len(fields) > 5 else ""
                name = ("binary" if path and os.path.realpath(path) == binary else
                        "libraries" if ".so" in path else "heap" if path == "[heap]" else
                        "anonymous" if not path else "other")
            elif fields[0] == "Rss:":
                parts[name] += int(fields[1]) / 1024
    return parts


def gnome_keyring_pid():
    """The gnome-keyring daemon of this private session (the one whose HOME is ours)."""
    for pid in subprocess.run(["pgrep", "-x", "gnome-keyring-d"], capture_output=True, text=True).stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if f"HOME={os.environ['HOME']}".encode() in environ.read().split(b"\0"):
                    return int(pid)
        except OSError:
            continue
    sys.exit("serve_large: no gnome-keyring daemon of this session")


def check(argv, expected):
    found = subprocess.run(argv, capture_output=True).stdout
    if found != expected:
        sys.exit(f"serve_large: {' '.join(argv)} read {found[:40]!r}, not {expected[:40]!r}")


def session_collection(out):
    """Fills this session's gnome-keyring's session collection and measures it."""
    import secretstorage  # Debian's python3-secretstorage, which python3-keyring depends on

    connection = secretstorage.dbus_init()
    collection = secretstorage.Collection(connection, "/org/freedesktop/secrets/collection/session")
    for number in range(1, ITEMS + 1):
        key = f"key-{number:05d}"
        collection.create_item(f"{SERVICE}/{key} (keychain-cli)", {
            "application": "keychain-cli", "service": SERVICE, "username": key,
            "xdg:schema": "org.freedesktop.Secret.Generic"}, f"value-{number}".encode())
    connection.close()
    check(LOOKUP, f"value-{ITEMS}".encode())
    times = measure([("session", LOOKUP, None, 0)])["session"]
    with open(out, "w") as file:
        json.dump({"lookup": times, "memory": memory(gnome_keyring_pid())}, file)


def main(out):
    subprocess.run(["gdbus", "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path",
                    "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.Unlock",
                    f"['/org/freedesktop/secrets/collection/{COLLECTION}']"], check=True, capture_output=True)
    check(LOOKUP, f"value-{ITEMS}".encode())
    work = tempfile.mkdtemp(prefix="kc-bench-serve-large-")
    try:
        items = [dict(service=SERVICE, key=f"key-{n:05d}", secret=f"value-{n}") for n in range(1, ITEMS + 1)]
        vault_of(items, os.path.join(work, "vault.age"))
        # serve as a provider (no output to mask, as the systemd unit runs it), then as
        # `serve -- COMMAND`, which masks every secret it holds in the command's output.
        serve_memory = {}
        for mask in (False, True):
            served = Served(os.path.join(work, "vault.age"), mask=mask)
            try:
                on_serve = ["env", f"DBUS_SESSION_BUS_ADDRESS={served.address}", *LOOKUP]
                check(on_serve, f"value-{ITEMS}".encode())
                if mask:
                    for _ in range(5):
                        check(on_serve, f"value-{ITEMS}".encode())
                else:
                    missing = [*on_serve[:-1], "missing"]
                    times = measure([("gnome-keyring", LOOKUP, None, 0), ("serve", on_serve, None, 0),
                                     ("serve, missing", missing, None, 1)])
                serve_memory["serve masking" if mask else "serve"] = memory(served.process.pid)
                if not mask:
                    parts = resident_by_mapping(served.process.pid, os.path.realpath(KC))
            finally:
                served.stop()
        file_memory = memory(gnome_keyring_pid())
        # The session-collection daemon: a second private session, this script again inside it.
        nested = os.path.join(work, "session.json")
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("KEYCHAIN_INSIDE_PRIVATE_SESSION", "KEYCHAIN_KEYRING_SETUP")}
        subprocess.run(["scripts/with-keyring", sys.executable, __file__, "--session-collection", nested],
                       env=dict(environment, KEYCHAIN_PRIVATE_KEYRING="1"), check=True)
        with open(nested) as file:
            session = json.load(file)
    finally:
        subprocess.run(["rm", "-rf", work])
    with open(out, "w") as file:
        json.dump({"items": ITEMS, "runs": RUNS, "lookup": {**times, "session collection": session["lookup"]},
                   "memory": {"gnome-keyring file": file_memory, "gnome-keyring session collection": session["memory"],
                              **serve_memory},
                   "serve resident by mapping": parts}, file, indent=1)


def table(results):
    """The Markdown rows of OUT.json, for bench.py."""
    def ms(name):
        return statistics.median(results["lookup"][name]) * 1000

    memory, lookup = results["memory"], results["lookup"]
    serve_peak, serve_ms = memory["serve"]["VmHWM"], ms("serve")
    lines = ["| provider, holding {:,} items | `secret-tool lookup` of one item | ÷ | peak memory (VmHWM) | ÷ | "
             "resident at the end (VmRSS) |".format(results["items"]), "|---|---|---|---|---|---|"]
    for title, name, key in (("gnome-keyring, loaded from its keyring file", "gnome-keyring", "gnome-keyring file"),
                             ("gnome-keyring, in its session collection", "session collection",
                              "gnome-keyring session collection")):
        lines.append(f"| {title} | {ms(name):.1f} ms | serve: **{serve_ms / ms(name):.2f}×** "
                     f"| {memory[key]['VmHWM']:.1f} MiB | serve: **{serve_peak / memory[key]['VmHWM']:.2f}×** "
                     f"| {memory[key]['VmRSS']:.1f} MiB |")
    lines.append(f"| `keychain-cli serve` of a vault | {serve_ms:.1f} ms | — | {serve_peak:.1f} MiB | — "
                 f"| {memory['serve']['VmRSS']:.1f} MiB |")
    masking = memory["serve masking"]
    lines.append(f"| `keychain-cli serve -- COMMAND`, masking every secret in the command's output | — | — "
                 f"| {masking['VmHWM']:.1f} MiB | — | {masking['VmRSS']:.1f} MiB |")
    lines.append(f"| `keychain-cli serve`, `secret-tool lookup` of a missing item (one index lookup for serve: "
                 f"secret-tool's own floor) | {ms('serve, missing'):.1f} ms | gnome-keyring's: "
                 f"**{ms('serve, missing') / ms('gnome-keyring'):.2f}×** | — | — | — |")
    parts = ", ".join(f"{name} {mib:.1f} MiB" for name, mib in results["serve resident by mapping"].items())
    return "\n".join(lines), parts


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--session-collection":
        session_collection(sys.argv[2])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
