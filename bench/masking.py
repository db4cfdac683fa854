#!/usr/bin/python3
"""The masked-output tables of `make bench`: a command that writes 1 GiB, read through a pipe,
with `exec` masking its output (3 secrets, and 1,000), with `exec --no-mask` (keychain-cli
replaced by the command), and through `cat` (the cost of one process that copies a stream); then
each kind of output (log text, random bytes, the worst case for a matcher: a run of `a` with the
secret `a`×100,001 + `b` loaded) masked for 1,000 secrets beside `cat`. Runs on its own too:
`bench/masking.py` prints the tables."""
import json, os, random, shutil, statistics, subprocess, tempfile, time

from common import KC

RUNS = int(os.environ.get("BENCH_MASK_RUNS", "5"))
GIB = 1 << 30
INPUT = 256 << 20  # each output of the second table


def timed(argv, env, size=GIB):
    """Seconds from start to exit of argv, its stdout read through a pipe (1 MiB reads) and
    dropped; checks that `size` bytes came (None: any number, output masked whole)."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    received = 0
    while chunk := process.stdout.read1(1 << 20):
        received += len(chunk)
    status = process.wait()
    elapsed = time.perf_counter() - start
    if status != 0 or (size is not None and received != size):
        raise SystemExit(f"bench: {argv} exited {status} after {received} bytes")
    return elapsed


def thousand_secrets():
    """999 secrets as CI holds them (tokens, passwords with punctuation, base64 keys, three-line
    keys), fixed by a seed, and the matcher's worst case, `a`×100,001 + `b`."""
    draw = random.Random(58)
    alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    printable = alphanumeric + "!#$%&()*+,-./:;<=>?@[]^_{|}~ '\"\\"
    b64 = alphanumeric + "+/"
    secrets = []
    for index in range(999):
        kind = index % 10
        if kind < 4:
            value = "ghp_" + "".join(draw.choices(alphanumeric, k=36))
        elif kind < 7:
            value = "".join(draw.choices(printable, k=draw.randint(12, 24)))
        elif kind < 9:
            value = "".join(draw.choices(b64, k=40))
        else:
            value = "\n".join("".join(draw.choices(b64, k=64)) for _ in range(3))
        secrets.append(value)
    return secrets + ["a" * 100_001 + "b"]


def masking_table():
    directory = tempfile.mkdtemp(prefix="kc-bench-mask-")
    try:
        env = dict(os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=f"{directory}/vault.age",
                   KEYCHAIN_PASSPHRASE="bench", KEYCHAIN_VAULT_WORK_FACTOR="10")
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        secrets = {"token": "ghp_" + "x7Kq" * 9, "password": "correct horse battery staple",
                   "key": "-----BEGIN KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" * 2 + "\n-----END KEY-----"}
        for key, value in secrets.items():
            subprocess.run([KC, "-s", "bench", "set", key], input=value.encode(), env=env, check=True)
        items = [{"service": "many", "key": f"s{index:04}", "secret": value, "encoding": "utf8"}
                 for index, value in enumerate(thousand_secrets())]
        with open(f"{directory}/many.json", "w") as file:
            json.dump({"format": "keychain-cli-export", "version": 1, "items": items}, file)
        subprocess.run([KC, "import", f"{directory}/many.json"], env=env, check=True, capture_output=True)
        # Log-like text: lines of base64 (64 MiB, written 16 times), the secrets nowhere in it.
        text = f"{directory}/text"
        with open(text, "wb") as file:
            subprocess.run(["sh", "-c", "head -c 50331648 /dev/urandom | base64 -w 100 | head -c 67108864"],
                           stdout=file, check=True)
        generate = ["sh", "-c", f'for i in $(seq 16); do cat "{text}"; done']
        mappings = [arg for key in secrets for arg in ("--env", f"{key.upper()}={key}")]
        rows = {
            "the command alone": generate,
            "through `cat`": ["sh", "-c", f'for i in $(seq 16); do cat "{text}"; done | cat'],
            "`exec --no-mask`": [KC, "-s", "bench", "exec", "--no-mask", *mappings, "--", *generate],
            "`exec` (masked)": [KC, "-s", "bench", "exec", *mappings, "--", *generate],
            "`exec` (masked), 1,000 secrets": [KC, "exec", "--from", "many", "--", *generate],
        }
        times = {name: [] for name in rows}
        for _ in range(RUNS):
            for name, argv in rows.items():
                times[name].append(timed(argv, env))
        median = {name: statistics.median(values) for name, values in times.items()}
        lines = ["| 1 GiB of output | time | throughput | ÷ `--no-mask` | ÷ `cat` |", "|---|---|---|---|---|"]
        for name, seconds in median.items():
            lines.append(
                f"| {name} | {seconds:.2f} s | {GIB / seconds / (1 << 20):.0f} MiB/s "
                f"| **{seconds / median['`exec --no-mask`']:.2f}×** | **{seconds / median['through `cat`']:.2f}×** |")
        return "\n".join(lines) + "\n\n" + inputs_table(directory, env)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def inputs_table(directory, env):
    """256 MiB of each kind of output through `cat` and masked for the 1,000 secrets."""
    inputs = {
        "log text (base64 lines)": f'for i in 1 2 3 4; do cat "{directory}/text"; done',
        "random bytes": f"head -c {INPUT} /dev/urandom",
        "a run of `a` (the secret `a`×100,001 + `b` loaded)": f"head -c {INPUT} /dev/zero | tr '\\0' a",
        "its base64 (`YWFh`…, 76 columns)": f"head -c {INPUT // 4 * 3} /dev/zero | tr '\\0' a | base64 | head -c {INPUT}",
    }
    lines = ["| 256 MiB of output, 1,000 secrets | through `cat` | `exec` (masked) | ÷ `cat` |", "|---|---|---|---|"]
    for name, command in inputs.items():
        made = f"{directory}/input"
        with open(made, "wb") as file:
            subprocess.run(["sh", "-c", command], stdout=file, check=True)
        size = os.path.getsize(made)
        plain = statistics.median(timed(["sh", "-c", f'cat "{made}" | cat'], env, size) for _ in range(RUNS))
        masked = statistics.median(timed([KC, "exec", "--from", "many", "--", "cat", made], env, None)
                                   for _ in range(RUNS))
        lines.append(f"| {name} | {size / plain / 1e6:.0f} MB/s | {size / masked / 1e6:.0f} MB/s "
                     f"| **{masked / plain:.2f}×** |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(masking_table())
