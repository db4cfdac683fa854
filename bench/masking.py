#!/usr/bin/python3
"""The masked-output table of `make bench`: a command that writes 1 GiB, read through a pipe,
with `exec` masking its output, with `exec --no-mask` (keychain-cli replaced by the command), and
through `cat` (the cost of one process that copies a stream). Runs on its own too:
`bench/masking.py` prints the table."""
import os, shutil, statistics, subprocess, tempfile, time

from common import KC

RUNS = int(os.environ.get("BENCH_MASK_RUNS", "5"))
GIB = 1 << 30


def timed(argv, env):
    """Seconds from start to exit of argv, its stdout read through a pipe (1 MiB reads) and
    dropped; checks that a whole GiB came."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    received = 0
    while chunk := process.stdout.read1(1 << 20):
        received += len(chunk)
    status = process.wait()
    elapsed = time.perf_counter() - start
    if status != 0 or received != GIB:
        raise SystemExit(f"bench: {argv} exited {status} after {received} bytes")
    return elapsed


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
        return "\n".join(lines)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    print(masking_table())
