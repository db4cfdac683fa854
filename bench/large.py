#!/usr/bin/python3
"""The 5,000-item rows of `make bench`: list, list --json and export against secret-tool.

Storing 5,000 items through the Secret Service takes gnome-keyring about 11 minutes (it rewrites
and fsyncs its whole keyring file per change: 27 s for the first 1,000, 80 s for the next), so
the items are written straight into a keyring file in gnome-keyring's plain-text format
(gkm-secret-textual.c: a GKeyFile) before its daemon starts, in a private session of their own:

  KEYCHAIN_PRIVATE_KEYRING=1 KEYCHAIN_KEYRING_SETUP="bench/large.py --write-keyring" \\
      scripts/with-keyring bench/large.py OUT.json

The items are keychain-cli's own (attributes service, username, application, xdg:schema; its
label), so every tool reads them as it reads items it stored. The rows only read: a plain-text
keyring and an encrypted one are the same to a reader, whose requests the daemon answers from
memory. Writes OUT.json: {row title: {tool: [seconds]}}.
"""
import json, os, subprocess, sys, time

from common import KC, spawn

ITEMS = int(os.environ.get("BENCH_LARGE_ITEMS", "5000"))
RUNS = int(os.environ.get("BENCH_LARGE_RUNS", "5"))
SERVICE = "bench-large"
COLLECTION = "bench5000"


def write_keyring():
    """The keyring file, in $XDG_DATA_HOME/keyrings (with-keyring runs this before the daemon)."""
    now = int(time.time())
    lines = ["[keyring]", f"display-name={COLLECTION}", f"ctime={now}", f"mtime={now}",
             "lock-on-idle=false", "lock-after=false", ""]
    for number in range(1, ITEMS + 1):
        key = f"key-{number:05d}"
        lines += [f"[{number}]", "item-type=0", f"display-name={SERVICE}/{key} (keychain-cli)",
                  f"secret=value-{number}", f"mtime={now}", f"ctime={now}", ""]
        attributes = [("application", "keychain-cli"), ("service", SERVICE), ("username", key),
                      ("xdg:schema", "org.freedesktop.Secret.Generic")]
        for index, (name, value) in enumerate(attributes):
            lines += [f"[{number}:attribute{index}]", f"name={name}", "type=string", f"value={value}", ""]
    path = os.path.join(os.environ["XDG_DATA_HOME"], "keyrings", COLLECTION + ".keyring")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
        file.write("\n".join(lines))


def main(out):
    # A plain-text keyring is loaded locked; unlocking it asks no password (and no prompt).
    subprocess.run(["gdbus", "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path",
                          "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.Unlock",
                          f"['/org/freedesktop/secrets/collection/{COLLECTION}']"], check=True, capture_output=True)
    listed = subprocess.run([KC, "-s", SERVICE, "list"], check=True, capture_output=True).stdout
    count = listed.count(b"\n")
    if count != ITEMS:
        sys.exit(f"large: keychain-cli lists {count} items of {SERVICE}, not {ITEMS}")
    secret = subprocess.run([KC, "-s", SERVICE, "get", f"key-{ITEMS:05d}"], check=True,
                                  capture_output=True).stdout
    if secret != f"value-{ITEMS}".encode():
        sys.exit("large: the last item's secret does not read back")
    # One secret-tool search per round, to which each keychain-cli command is compared: at
    # 5,000 items it takes about half a minute, and may fail: libsecret gives each D-Bus call
    # 25 s, and gnome-keyring's answers to its per-item calls take longer in all. Its exit
    # status is kept with its time.
    commands = {
        "list": [KC, "-s", SERVICE, "list"],
        "list --json": [KC, "-s", SERVICE, "list", "--json"],
        "export --yes": [KC, "-s", SERVICE, "export", "--yes"],
        "secret-tool": ["secret-tool", "search", "--all", "service", SERVICE],
    }
    results = {name: [] for name in commands}
    exits = []
    for round_index in range(1 + RUNS):  # one warm-up round
        names = list(commands)
        names = names[round_index % len(names):] + names[:round_index % len(names)]
        for name in names:
            seconds, code = spawn(commands[name])
            if name == "secret-tool":
                exits.append(code) if round_index else None
            elif code != 0:
                sys.exit(f"large: {' '.join(commands[name])} exited {code}")
            if round_index:
                results[name].append(seconds)
    with open(out, "w") as file:
        json.dump({"items": ITEMS, "runs": RUNS, "results": results, "secret-tool exits": exits}, file)

if __name__ == "__main__":
    if sys.argv[1:] == ["--write-keyring"]:
        write_keyring()
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
