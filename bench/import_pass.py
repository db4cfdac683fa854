#!/usr/bin/python3
"""The pass rows of `make bench`: `keychain-cli import --format pass` of a store of
BENCH_PASS_ENTRIES (default 10,000) entries, beside pass-import (`pimport csv pass STORE`, which
reads each entry with `pass show`) reading the same store.

The store is made in a throwaway GNUPGHOME with a key without a passphrase: one gpg process
encrypts every entry (`--encrypt-files`), in folders of 100, each `password-N`, `login: user-N`
and `url: https://example.com/N`. keychain-cli imports into a new vault each run (one write, a
low scrypt work factor: the rows measure reading the store); pass-import writes a CSV file. Both
must find every entry. Writes OUT.json: {"entries", "runs", "results": {tool: [seconds]}}.

    bench/import_pass.py OUT.json
"""
import json, os, shutil, subprocess, sys, tempfile, time

from common import KC

ENTRIES = int(os.environ.get("BENCH_PASS_ENTRIES", "10000"))
RUNS = int(os.environ.get("BENCH_PASS_RUNS", "2"))


def make_store(work):
    """A pass store of ENTRIES entries under `work`, and the environment that reads it."""
    home, store = os.path.join(work, "gnupg"), os.path.join(work, "store")
    os.makedirs(home, mode=0o700)
    environment = dict(os.environ, GNUPGHOME=home, PASSWORD_STORE_DIR=store)
    subprocess.run(["gpg", "--batch", "--quiet", "--passphrase", "", "--quick-gen-key", "Bench <bench@example.com>",
                    "future-default", "default", "never"], env=environment, check=True, capture_output=True)
    os.makedirs(store)
    with open(os.path.join(store, ".gpg-id"), "w") as file:
        file.write("bench@example.com\n")
    plain = []
    for number in range(ENTRIES):
        folder = os.path.join(store, f"folder-{number // 100:03d}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"entry-{number:05d}")
        with open(path, "w") as file:
            file.write(f"password-{number}\nlogin: user-{number}\nurl: https://example.com/{number}\n")
        plain.append(path)
    for start in range(0, len(plain), 1000):  # argv stays short
        subprocess.run(["gpg", "--batch", "--yes", "--quiet", "--trust-model", "always", "-r", "bench@example.com",
                        "--encrypt-files", *plain[start:start + 1000]], env=environment, check=True)
    for path in plain:
        os.unlink(path)
    return store, environment


def main(out):
    work = tempfile.mkdtemp(prefix="kc-bench-pass-")
    try:
        store, environment = make_store(work)
        vault = os.path.join(work, "vault.age")
        csv = os.path.join(work, "out.csv")
        ours = dict(environment, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=vault, KEYCHAIN_PASSPHRASE="bench",
                    KEYCHAIN_VAULT_WORK_FACTOR="10", KEYCHAIN_TIMEOUT="60")
        commands = {
            "keychain-cli": ([KC, "-s", "pass", "import", "--format", "pass"], ours),
            "pass-import": (["pimport", "csv", "pass", store, "-o", csv, "-f"], environment),
        }
        results = {name: [] for name in commands}
        for round_index in range(RUNS):
            names = list(commands) if round_index % 2 == 0 else list(reversed(commands))
            for name in names:
                output = vault if name == "keychain-cli" else csv
                if os.path.exists(output):
                    os.unlink(output)
                argv, env = commands[name]
                start = time.perf_counter()
                done = subprocess.run(argv, env=env, capture_output=True)
                results[name].append(time.perf_counter() - start)
                if done.returncode != 0:
                    sys.exit(f"import_pass: {' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-300:]}")
            # Both found every entry.
            listed = subprocess.run([KC, "-s", "pass", "list"], env=ours, capture_output=True, check=True).stdout
            stored = listed.count(b"\n")
            rows = open(csv).read().count("\n") - 1
            if stored != ENTRIES or rows != ENTRIES:
                sys.exit(f"import_pass: keychain-cli stored {stored}, pass-import read {rows}, of {ENTRIES} entries")
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=environment)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(out, "w") as file:
        json.dump({"entries": ENTRIES, "runs": RUNS, "results": results}, file)


def table(results):
    """The Markdown rows of OUT.json, for bench.py."""
    import statistics

    seconds = {name: statistics.median(values) for name, values in results["results"].items()}
    ours, theirs = seconds["keychain-cli"], seconds["pass-import"]
    return "\n".join([
        f"| import of a pass store of {results['entries']:,} entries | keychain-cli | pass-import | "
        "keychain-cli ÷ pass-import |",
        "|---|---|---|---|",
        f"| time (median of {results['runs']}) | {ours:.1f} s | {theirs:.1f} s | **{ours / theirs:.2f}×** |",
    ])


if __name__ == "__main__":
    if len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
