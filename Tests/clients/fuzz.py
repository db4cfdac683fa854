"""Sends random sequences of Secret Service calls to serve from several clients at once, each
batch sent without waiting for a reply (pipelined), on items the clients share, while
keychain-cli writes the same backend; checks that each call gets one reply, in the order of the
calls, then that serve is alive and that what it serves is what the backend holds.

    python3 fuzz.py CLIENTS DURATION SEED   (run as serve's command; keychain-cli in PATH, $PW)

Prints one line: "calls N errors {name: count} alive consistent" (or what differs).
"""

import base64
import json
import os
import random
import subprocess
import sys
import time

from jeepney import HeaderFields

from ssclient import (DEFAULT_ALIAS, I_COLLECTION, I_ITEM, I_OBJECTS, I_PROPERTIES, I_SERVICE, I_SESSION, LOGIN,
                      SERVICE, SESSION_COLLECTION, Client, backend_environment, cli_output)

# What a reply may say; anything else (GDBus's unmapped errors, no reply) is a defect.
EXPECTED_ERRORS = {
    "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.InvalidArgs",
    "org.freedesktop.DBus.Error.NotSupported", "org.freedesktop.Secret.Error.IsLocked",
    "org.freedesktop.Secret.Error.NoSession", "org.freedesktop.Secret.Error.NoSuchObject",
}


def attributes(rng):
    if rng.random() < 0.6:
        return {"service": rng.choice(["fz1", "fz2"]), "username": f"u{rng.randrange(6)}"}
    return {"kind": rng.choice(["a", "b"]), "n": str(rng.randrange(4))}


def random_call(rng, client, items, sessions):
    """One call: (path, interface, method, signature, body)."""
    item = rng.choice(items) if items and rng.random() < 0.9 else f"{rng.choice([LOGIN, DEFAULT_ALIAS])}/{rng.randrange(1, 400)}"
    secret = (client.session, b"", bytes(rng.randrange(256) for _ in range(rng.randrange(64))), "text/plain")
    choice = rng.randrange(17)
    if choice <= 3:
        properties = {"org.freedesktop.Secret.Item.Attributes": ("a{ss}", attributes(rng)),
                      "org.freedesktop.Secret.Item.Label": ("s", f"l{rng.randrange(9)}")}
        collection = SESSION_COLLECTION if rng.random() < 0.2 else rng.choice([LOGIN, DEFAULT_ALIAS])
        return (collection, I_COLLECTION, "CreateItem", "a{sv}(oayays)b", (properties, secret, rng.random() < 0.5))
    if choice == 4:
        return (item, I_ITEM, "Delete")
    if choice == 5:
        return (item, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Attributes", ("a{ss}", attributes(rng))))
    if choice == 6:
        return (item, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Label", ("s", f"l{rng.randrange(9)}")))
    if choice == 7:
        return (item, I_ITEM, "SetSecret", "(oayays)", (secret,))
    if choice == 8:
        return (item, I_ITEM, "GetSecret", "o", (client.session,))
    if choice == 9:
        return (SERVICE, I_SERVICE, "GetSecrets", "aoo", (rng.sample(items, min(len(items), 5)), client.session))
    if choice == 10:
        return (SERVICE, I_SERVICE, "SearchItems", "a{ss}", ({} if rng.random() < 0.5 else attributes(rng),))
    if choice == 11:
        return (item, I_PROPERTIES, "GetAll", "s", (I_ITEM,))
    if choice == 12:
        return (item, I_PROPERTIES, "Get", "ss", (I_ITEM, rng.choice(["Attributes", "Label", "Modified"])))
    if choice == 13:
        return (SERVICE, I_OBJECTS, "GetManagedObjects")
    if choice == 14:
        return (SERVICE, I_SERVICE, "ReadAlias", "s", (rng.choice(["default", "session", "login", "x"]),))
    if choice == 15:
        if sessions and rng.random() < 0.5:
            return (sessions.pop(), I_SESSION, "Close")
        return (SERVICE, I_SERVICE, "OpenSession", "sv", ("plain", ("s", "")))
    lock = "Lock" if rng.random() < 0.2 else "Unlock"
    return (SERVICE, I_SERVICE, lock, "ao", ([rng.choice([LOGIN, SESSION_COLLECTION, item])],))


def worker(number, duration, seed):
    try:
        run_worker(number, duration, seed)
    except Exception as error:  # serve gone, a reply that never came
        print(json.dumps({"defect": f"client {number}: {error!r}"}))


def run_worker(number, duration, seed):
    rng = random.Random(seed * 100 + number)
    client = Client()
    items, sessions, errors, calls = [], [], {}, 0
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        batch = [random_call(rng, client, items, sessions) for _ in range(rng.randrange(1, 13))]
        sent = {client.send(*call): call for call in batch}
        answered = []
        while len(answered) < len(sent):
            reply = client.connection.receive(timeout=60)
            serial = reply.header.fields.get(HeaderFields.reply_serial)
            if serial not in sent:
                continue
            answered.append(serial)
            error = reply.header.fields.get(HeaderFields.error_name)
            method = sent[serial][2]
            if error:
                errors[error] = errors.get(error, 0) + 1
            elif method == "CreateItem":
                items.append(reply.body[0])
            elif method == "SearchItems" and sent[serial][1] == I_SERVICE:
                items = list(dict.fromkeys(items + reply.body[0] + reply.body[1]))[-60:]
            elif method == "OpenSession":
                sessions.append(reply.body[1])
        if len(set(answered)) != len(sent):
            print(json.dumps({"defect": "a call was answered twice or not at all"}))
            return
        if answered != sorted(answered):
            print(json.dumps({"defect": f"replies out of the order of the calls: {answered}"}))
            return
        calls += len(sent)
    print(json.dumps({"calls": calls, "errors": errors}))


def backend_secrets():
    """Every secret the backend holds, read by keychain-cli directly (not through serve)."""
    exported = cli_output("export", "--all-services", "--yes")
    items = json.loads(exported.stdout)["items"]
    return sorted(item["secret"] if item["encoding"] == "base64" else base64.b64encode(item["secret"].encode()).decode()
                  for item in items)


def main():
    clients, duration, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    writer = subprocess.Popen(
        ["sh", "-c", 'while :; do u=u$(( $(od -An -N1 -tu1 /dev/urandom) % 6 )); '
         'if [ $(( $(od -An -N1 -tu1 /dev/urandom) % 3 )) = 0 ]; then keychain-cli -s fz1 delete --ignore-missing $u; '
         'else printf "w$u" | keychain-cli -s fz1 set $u; fi >/dev/null 2>&1; done'],
        env=backend_environment(), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        workers = [subprocess.Popen([sys.executable, __file__, "worker", str(n), str(duration), str(seed)],
                                    stdout=subprocess.PIPE) for n in range(clients)]
        outputs = [w.communicate()[0].decode().strip().splitlines() for w in workers]
    finally:
        os.killpg(writer.pid, 9)
        writer.wait()
    results = [json.loads(lines[-1]) if lines else {"defect": "a client printed nothing"} for lines in outputs]
    defects = [r["defect"] for r in results if "defect" in r]
    calls = sum(r.get("calls", 0) for r in results)
    errors = {}
    for result in results:
        for name, count in result.get("errors", {}).items():
            errors[name] = errors.get(name, 0) + count

    client = Client()  # serve still answers
    client.call(SERVICE, I_SERVICE, "Unlock", "ao", ([LOGIN, SESSION_COLLECTION],))
    served = {}
    for attempt in range(50):  # until serve's watcher has seen the last write of keychain-cli
        time.sleep(0.2)
        paths = client.call(LOGIN, I_COLLECTION, "SearchItems", "a{ss}", ({},))[0]
        secrets = client.call(SERVICE, I_SERVICE, "GetSecrets", "aoo", (paths, client.session))[0]
        served = sorted(base64.b64encode(bytes(value[2])).decode() for value in secrets.values())
        if served == backend_secrets() and len(secrets) == len(paths):
            break
    else:
        defects.append(f"serve shows {len(served)} secrets, the backend holds {len(backend_secrets())}")
    unexpected = {name: count for name, count in errors.items() if name not in EXPECTED_ERRORS}
    if unexpected:
        defects.append(f"unexpected errors {unexpected}")
    print(f"calls {calls} errors {json.dumps(errors, sort_keys=True)} alive "
          + ("consistent" if not defects else "; ".join(defects)))


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
