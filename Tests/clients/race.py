"""Races keychain-cli's own writes against serve's non-replacing creates and attribute moves of
the same SERVICE/KEY, for DURATION seconds, and counts the acknowledged writes lost.

Each round: `keychain-cli -s S set kN` exits 0, then (within milliseconds, before serve's watcher
can have seen it) a client of serve creates an item with service S and username kN, not
replacing; likewise an item of serve's, kept elsewhere, has its attributes changed to name S/mN
just after `set mN` exited 0. Both writes must survive: keychain-cli's secret stays at S/kN and
S/mN, and serve's items keep theirs (under secret-service). A second keychain-cli writes other
keys of S all the while. Prints "rounds R lost L".

    python3 race.py SERVICE DURATION        (run as serve's command; keychain-cli in PATH, $PW)
"""

import os
import random
import subprocess
import sys
import time

from ssclient import I_ITEM, Client, backend_environment, cli, cli_output

service, duration = sys.argv[1], float(sys.argv[2])
client = Client()
# Another writer of the same service meanwhile (OpenBao: the same secret's versions).
bystander = subprocess.Popen(
    ["sh", "-c", 'i=0; while :; do i=$((i+1)); printf "b$i" | '
     f'keychain-cli -s "{service}" set "bystander$((i % 5))" >/dev/null 2>&1; done'],
    env=backend_environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
created = {}
moved = {}
acknowledged = []
try:
    deadline = time.monotonic() + duration
    round = 0
    while time.monotonic() < deadline:
        round += 1
        key = f"k{round}"
        if cli("-s", service, "set", key, stdin=f"cli-{key}".encode()) == 0:
            acknowledged.append(key)
        time.sleep(random.uniform(0, 0.01))
        created[key] = client.create({"service": service, "username": key}, f"serve-{key}")

        key = f"m{round}"
        item = client.create({"kind": "move", "n": str(round)}, f"serve-{key}")
        if cli("-s", service, "set", key, stdin=f"cli-{key}".encode()) == 0:
            acknowledged.append(key)
        time.sleep(random.uniform(0, 0.01))
        client.set_property(item, I_ITEM, "Attributes", "a{ss}", {"service": service, "username": key})
        moved[key] = item
finally:
    os.killpg(bystander.pid, 9)
    bystander.wait()

lost = 0
for key in acknowledged:
    result = cli_output("-s", service, "get", key)
    if result.returncode != 0 or result.stdout != f"cli-{key}".encode():
        lost += 1
        print(f"keychain-cli's {key} lost: {result.stdout!r}", file=sys.stderr)
for key, item in list(created.items()) + list(moved.items()):
    try:
        secret = client.secret(item)
    except Exception as error:
        secret = repr(error).encode()
    if secret != f"serve-{key}".encode():
        lost += 1
        print(f"serve's {key} ({item}) lost: {secret!r}", file=sys.stderr)
print(f"rounds {round} lost {lost}")
