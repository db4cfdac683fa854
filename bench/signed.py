"""The signed vault's table of `make bench`: what verifying costs a `get` and a `list --json` of a
tree vault, beside the same vault read without `--require-signed`, and beside what a team would
script without keychain-cli (`ssh-keygen -Y verify` of the item's signature, then `age -d`).

One team tree vault opened with an age identity (no scrypt), signed by an ed25519 key made by
ssh-keygen; the same files are read with and without verification, so the difference is the
verification alone."""
import json, os, shutil, statistics, subprocess, sys, tempfile

from common import KC, measure

LISTED = int(os.environ.get("BENCH_SIGNED_ITEMS", "10000"))
LARGE_RUNS = int(os.environ.get("BENCH_TREE_RUNS", "10"))


def run(argv, stdin=None, env=None):
    result = subprocess.run(argv, input=stdin, capture_output=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{argv[:6]} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


def document(count):
    items = [{"service": "bench", "key": f"k{i:06d}", "encoding": "utf8", "secret": f"value-{i}-" + "x" * 32}
             for i in range(count)]
    return json.dumps({"format": "keychain-cli-export", "version": 1, "items": items}).encode()


def ms(values):
    return statistics.median(values) * 1000


def openssl_microseconds():
    """One ed25519 verification and one X25519 exchange, in µs, as `openssl speed` measures them here."""
    def rate(algorithm, column):
        out = subprocess.run(["openssl", "speed", "-seconds", "1", algorithm], capture_output=True, text=True).stdout
        line = [line for line in out.splitlines() if "Ed25519" in line or "X25519" in line][-1]
        return 1e6 / float(line.split()[column])
    return rate("ed25519", -1), rate("ecdhx25519", -1)


def signed_table():
    directory = tempfile.mkdtemp(prefix="kc-bench-signed-")
    try:
        identity = os.path.join(directory, "identity.txt")
        recipient = run([KC, "vault", "keygen", "-o", identity]).decode().strip()
        key = os.path.join(directory, "alice")
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", key])
        allowed = os.path.join(directory, "allowed_signers")
        with open(key + ".pub") as public, open(allowed, "w") as out:
            out.write("alice@example.org " + " ".join(public.read().split()[:2]) + "\n")
        vaults = {}
        for count in (10, LISTED):
            vault = os.path.join(directory, f"tree-{count}")
            run([KC, "vault", "init", vault, "--recipient", recipient, "--signing-key", key])
            base = [KC, "--backend", "vault", "--vault", vault, "--identity", identity, "-s", "bench"]
            run(base + ["--signing-key", key, "import"], stdin=document(count))
            vaults[count] = (vault, base, base + ["--allowed-signers", allowed, "--require-signed"])
        vault, plain, verified = vaults[10]
        item = os.path.join(vault, "bench", "k000003.age")
        with open(os.path.join(vault, ".vault-id")) as file:
            vault_id = file.read().strip()
        message = os.path.join(directory, "message")
        # The peer: what a team scripts with OpenSSH and age alone (the message as vault.md builds it).
        peer = ["/bin/sh", "-c",
                f"printf 'keychain-cli-vault-signature v1\\nvault %s\\nfile %s\\nsha256 %s\\n' {vault_id} "
                f"bench/k000003.age \"$(sha256sum < {item} | cut -d' ' -f1)\" > {message} && "
                f"ssh-keygen -Y verify -f {allowed} -I alice@example.org -n keychain-cli-vault -s {item}.sig "
                f"< {message} > /dev/null && age -d -i {identity} {item} > /dev/null"]
        reads = measure([
            ("get", plain + ["get", "k000003"], None, 0),
            ("get --require-signed", verified + ["get", "k000003"], None, 0),
            ("ssh-keygen -Y verify + age -d", peer, None, 0),
            ("set (signed)", plain + ["--signing-key", key, "set", "k000004"], b"new value", 0),
        ])
        _, plain, verified = vaults[LISTED]
        import common
        runs, common.RUNS = common.RUNS, LARGE_RUNS
        try:
            listing = measure([
                ("list --json", plain + ["list", "--json"], None, 0),
                ("list --json --require-signed", verified + ["list", "--json"], None, 0),
            ])
        finally:
            common.RUNS = runs
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    verify_us, exchange_us = openssl_microseconds()
    get, checked = ms(reads["get"]), ms(reads["get --require-signed"])
    peer_ms, signed_set = ms(reads["ssh-keygen -Y verify + age -d"]), ms(reads["set (signed)"])
    listed, listed_checked = ms(listing["list --json"]), ms(listing["list --json --require-signed"])
    return "\n".join([
        "\n## Signed vaults: what verifying costs\n",
        "| operation | unsigned read | `--require-signed` | verification | ÷ |",
        "|---|---|---|---|---|",
        f"| `get` of one item | {get:.1f} ms | {checked:.1f} ms | {checked - get:.2f} ms | **{checked / get:.2f}×** |",
        f"| `list --json` of {LISTED:,} items | {listed:.0f} ms | {listed_checked:.0f} ms | "
        f"{listed_checked - listed:.0f} ms | **{listed_checked / listed:.2f}×** |",
        "",
        f"The same `get` scripted with OpenSSH and age (`ssh-keygen -Y verify` of the item's signature over the "
        f"message vault.md documents, then `age -d`): {peer_ms:.1f} ms (**{peer_ms / checked:.1f}×** keychain-cli's "
        f"verified `get`). A signed `set` (the item, then its signature, with an ed25519 key file): "
        f"{signed_set:.1f} ms.",
        "",
        f"How: one team tree vault opened with an age identity, signed by an ed25519 key; the same files read "
        f"with and without `--require-signed --allowed-signers`, so the difference is the verification (one "
        f"SHA-256 of the item, one ed25519 check, the recipients list's once per process). Medians of "
        f"{common.RUNS} interleaved runs for the one-item rows, {LARGE_RUNS} for the listings. The listing's "
        f"floor: `openssl speed` takes {verify_us:.0f} µs for one ed25519 verification here and {exchange_us:.0f} µs "
        f"for one X25519 exchange, the main cost of reading an unsigned item, so one verification per item "
        f"(every file is signed alone, so that git merges them) adds more than the reading costs.",
    ])


if __name__ == "__main__":
    print(signed_table())
