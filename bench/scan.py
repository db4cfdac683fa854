#!/usr/bin/python3
"""The scan table of `make bench`: `keychain-cli scan` of a 1 GiB tree (16 files of 64 MiB of
log-like text: lines of base64) with 1,000 secrets loaded from a vault, beside
`grep -rnF -f values.txt` of the same tree for the secrets' plain values (each line of a secret of
several as a pattern of its own: grep looks for fewer forms than scan, which also looks for each
one's base64, wrapped or not, URL and JSON escapes). Throughput in MB/s for both (the files are
read from the page cache: both are warmed first), and scan's peak RSS on a 256 MiB tree and on
the 1 GiB one, which must not differ by more than noise: memory does not grow with the input.
Three of the secrets are planted in the tree, so that both find something (exit 1 and 0).
Runs on its own too: `bench/scan.py` prints the tables."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

from common import KC
from masking import thousand_secrets

RUNS = int(os.environ.get("BENCH_SCAN_RUNS", "5"))
FILE = 64 << 20
FILES = 16


def timed(argv, env, expected):
    start = time.perf_counter()
    code = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    elapsed = time.perf_counter() - start
    if code != expected:
        sys.exit(f"bench: {argv[:4]} exited {code}, expected {expected}")
    return elapsed


def make_tree(directory):
    """16 files of 64 MiB under tree/ (the first 4 also under small/, hard links: 256 MiB), each
    made of one 64 MiB block of base64 lines with a different line first (so no two are one file)."""
    block = f"{directory}/block"
    with open(block, "wb") as file:
        subprocess.run(["sh", "-c", f"head -c {FILE // 4 * 3} /dev/urandom | base64 -w 100 | head -c {FILE}"],
                       stdout=file, check=True)
    for name in ("tree", "small"):
        os.makedirs(f"{directory}/{name}/sub", exist_ok=True)
    for index in range(FILES):
        path = f"{directory}/tree/sub/part{index:02}.log" if index % 2 else f"{directory}/tree/part{index:02}.log"
        shutil.copyfile(block, path)
        if index < 4:
            os.link(path, path.replace("/tree/", "/small/"))
    os.remove(block)


def scan_table():
    directory = tempfile.mkdtemp(prefix="kc-bench-scan-")
    try:
        env = dict(os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=f"{directory}/vault.age",
                   KEYCHAIN_PASSPHRASE="bench", KEYCHAIN_VAULT_WORK_FACTOR="10", LC_ALL="C")
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        # The matcher's worst case (`a`×100,001 + `b`) is masking's table's; here 1,000 secrets as CI holds them.
        secrets = thousand_secrets()[:999] + ["npm_" + "Q3vLx9" * 6]
        items = [{"service": "many", "key": f"s{index:04}", "secret": value, "encoding": "utf8"}
                 for index, value in enumerate(secrets)]
        with open(f"{directory}/many.json", "w") as file:
            json.dump({"format": "keychain-cli-export", "version": 1, "items": items}, file)
        subprocess.run([KC, "import", f"{directory}/many.json"], env=env, check=True, capture_output=True)
        os.remove(f"{directory}/many.json")
        with open(f"{directory}/values.txt", "w") as file:
            for value in secrets:
                for line in value.split("\n"):
                    file.write(line + "\n")
        make_tree(directory)
        with open(f"{directory}/tree/part00.log", "ab") as file:
            file.write(("\n" + "\n".join(secrets[:3]) + "\n").encode())
        size = sum(os.path.getsize(os.path.join(root, name))
                   for root, _, names in os.walk(f"{directory}/tree") for name in names)
        grep = ["grep", "-rnF", "-f", f"{directory}/values.txt", f"{directory}/tree"]
        scan = [KC, "scan", "--from", "many", f"{directory}/tree"]
        for argv, expected in ((grep, 0), (scan, 1)):  # the page cache warmed, each checked once
            timed(argv, env, expected)
        times = {"grep": [], "scan": []}
        for _ in range(RUNS):
            times["grep"].append(timed(grep, env, 0))
            times["scan"].append(timed(scan, env, 1))
        median = {name: statistics.median(values) for name, values in times.items()}
        small_rss = statistics.median(peak_memory_of([KC, "scan", "--from", "many", f"{directory}/small"], env, 1)
                                      for _ in range(RUNS))
        large_rss = statistics.median(peak_memory_of(scan, env, 1) for _ in range(RUNS))
        rate = {name: size / seconds / 1e6 for name, seconds in median.items()}
        lines = [
            f"| {size >> 20} MiB tree, 1,000 secrets | time | throughput | ÷ grep's throughput |",
            "|---|---|---|---|",
            f"| `grep -rnF -f values.txt` (the plain values) | {median['grep']:.2f} s | {rate['grep']:.0f} MB/s | 1.00× |",
            f"| `keychain-cli scan --from many` (every form) | {median['scan']:.2f} s | {rate['scan']:.0f} MB/s "
            f"| **{rate['scan'] / rate['grep']:.2f}×** |",
            "",
            "| peak RSS of `scan`, 1,000 secrets | 256 MiB tree | 1 GiB tree |",
            "|---|---|---|",
            f"| `keychain-cli scan --from many` | {small_rss / 1024:.1f} MiB | {large_rss / 1024:.1f} MiB |",
        ]
        return "\n".join(lines)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def peak_memory_of(argv, env, expected):
    """Peak RSS in KiB of one run of argv (GNU time), which must exit `expected`."""
    with tempfile.NamedTemporaryFile("r") as report:
        code = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, *argv], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode
        if code != expected:
            sys.exit(f"bench: {argv[:4]} exited {code} under /usr/bin/time")
        return int(report.read().split()[-1])


if __name__ == "__main__":
    print(scan_table())
