"""The `serve` table of `make bench`: keychain-cli's Secret Service against gnome-keyring.

Both providers hold the same items of one service (the list rows' LIST_ITEMS items, exported from
gnome-keyring into a vault that `keychain-cli serve` serves) and each is on its own session bus:
gnome-keyring on the benchmark's private session, serve on the private bus of
`serve -- COMMAND`. The same clients run against each, their bus chosen by `env
DBUS_SESSION_BUS_ADDRESS=…` on both sides alike. Peak memory is serve's VmHWM after the rows
have run, at LIST_ITEMS items and at 10 times as many."""
import json, os, statistics, subprocess, tempfile, time

from common import KC, measure

PASSPHRASE = "bench serve passphrase"


class Served:
    """`keychain-cli --backend vault serve` of `vault`, on its own private bus, until stopped;
    unless `mask` is false, it masks every secret in its command's output, as `serve -- COMMAND` does."""

    def __init__(self, vault, mask=True):
        self.directory = tempfile.mkdtemp(prefix="kc-bench-serve-")
        address_file = os.path.join(self.directory, "address")
        environment = dict(os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=vault,
                           KEYCHAIN_PASSPHRASE=PASSPHRASE, KEYCHAIN_VAULT_WORK_FACTOR="10")
        self.process = subprocess.Popen(
            [KC, "serve", *([] if mask else ["--no-mask"]), "--", "sh", "-c", f'echo "$DBUS_SESSION_BUS_ADDRESS" > {address_file}.new && '
             f'mv {address_file}.new {address_file} && exec sleep 100000'],
            env=environment, stdin=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(address_file):
                break
            if self.process.poll() is not None:
                raise SystemExit(f"bench: serve exited {self.process.returncode}")
            time.sleep(0.05)
        with open(address_file) as file:
            self.address = file.read().strip()

    def peak_rss_mib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        return kib / 1024

    def stop(self):
        subprocess.run(["pkill", "-P", str(self.process.pid), "sleep"])
        self.process.wait(timeout=30)


def vault_of(items, path):
    """A vault at `path` holding `items` ({service, key, secret} dicts), imported in one write."""
    document = os.path.join(os.path.dirname(path), "items.json")
    with open(document, "w") as file:
        json.dump({"format": "keychain-cli-export", "version": 1, "items": [
            {"service": i["service"], "key": i["key"], "encoding": "utf8", "secret": i["secret"]}
            for i in items]}, file)
    environment = dict(os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=path, KEYCHAIN_PASSPHRASE=PASSPHRASE,
                       KEYCHAIN_VAULT_WORK_FACTOR="10")
    subprocess.run([KC, "import", document], env=environment, check=True, capture_output=True)


def serve_table(service):
    """Rows: lookup, search --all and list --json of `service`'s LIST_ITEMS items, each provider
    on its own bus; then serve's peak memory at LIST_ITEMS and 10 × LIST_ITEMS items."""
    exported = subprocess.run([KC, "-s", service, "export", "--yes"], check=True, capture_output=True).stdout
    items = json.loads(exported)["items"]
    work = tempfile.mkdtemp(prefix="kc-bench-vault-")
    vault_of(items, os.path.join(work, "vault.age"))
    served = Served(os.path.join(work, "vault.age"))
    gnome = os.environ["DBUS_SESSION_BUS_ADDRESS"]
    gk, kc = "gnome-keyring", "keychain-cli serve"
    last = sorted(i["key"] for i in items)[-1]

    def on(address, argv):
        return ["env", f"DBUS_SESSION_BUS_ADDRESS={address}", "KEYCHAIN_BACKEND=secret-service", *argv]

    clients = {
        "`secret-tool lookup` of one item": ["secret-tool", "lookup", "service", service, "username", last],
        f"`secret-tool search --all` of {len(items):,} items": ["secret-tool", "search", "--all", "service", service],
        f"`keychain-cli list --json` of {len(items):,} items": [KC, "-s", service, "list", "--json"],
    }
    try:
        measured = {title: measure([(gk, on(gnome, argv), None, 0), (kc, on(served.address, argv), None, 0)])
                    for title, argv in clients.items()}
        rss = {len(items): served.peak_rss_mib()}
    finally:
        served.stop()
    many = [dict(service=service, key=f"key-{n:06d}", secret=f"v{n}") for n in range(10 * len(items))]
    vault_of(many, os.path.join(work, "many.age"))
    served = Served(os.path.join(work, "many.age"))
    try:
        subprocess.run(on(served.address, ["secret-tool", "search", "--all", "service", service]), check=True,
                       capture_output=True)
        subprocess.run(on(served.address, [KC, "-s", service, "list", "--json"]), check=True, capture_output=True)
        rss[len(many)] = served.peak_rss_mib()
    finally:
        served.stop()
        subprocess.run(["rm", "-rf", work])

    def ms(values):
        return statistics.median(values) * 1000

    lines = ["| operation | gnome-keyring | keychain-cli serve | serve ÷ gnome-keyring |", "|---|---|---|---|"]
    for title, result in measured.items():
        lines.append(f"| {title} | {ms(result[gk]):.1f} ms | {ms(result[kc]):.1f} ms "
                     f"| **{ms(result[kc]) / ms(result[gk]):.2f}×** |")
    memory = ", ".join(f"{count:,} items: {mib:.1f} MiB" for count, mib in rss.items())
    return "\n".join(lines), memory
