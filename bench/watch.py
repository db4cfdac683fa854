"""The `watch` table of `make bench`: from a write to its line on `keychain-cli watch`."""
import os, shutil, statistics, subprocess, tempfile, time

from common import DEVNULL, KC, PY


def watch_latency(writers, watch_args=(), writes=100):
    """From a write's end (the writer process exited) to its line on `keychain-cli watch`'s
    stdout, for each writer: {name: (env, write(i) -> (argv, stdin))}; a table row per writer with
    the median and worst of `writes`. Negative: the line came first."""
    import queue
    import threading
    S = "bench-watch"
    rows, extras = [], 0
    for name, (env, write) in writers.items():
        watch = subprocess.Popen([KC, "-s", S, "watch", *watch_args], stdout=subprocess.PIPE, stdin=DEVNULL, env=env)
        lines = queue.Queue()

        def read(stream=watch.stdout, lines=lines):
            for line in stream:
                lines.put((time.monotonic(), line))

        threading.Thread(target=read, daemon=True).start()
        for attempt in range(100):  # watching has begun once a write of ours is seen
            argv, data = write(-1 - attempt)
            subprocess.run(argv, input=data, env=env, check=True, capture_output=True)
            try:
                lines.get(timeout=0.5)
                break
            except queue.Empty:
                pass
        time.sleep(0.5)
        while not lines.empty():
            lines.get()
        latencies = []
        for i in range(writes):
            argv, data = write(i)
            subprocess.run(argv, input=data, env=env, check=True, capture_output=True)
            done = time.monotonic()
            arrived, _ = lines.get(timeout=10)
            latencies.append(arrived - done)
            time.sleep(0.01)
            while not lines.empty():
                lines.get()
                extras += 1
        watch.terminate()
        watch.wait()
        rows.append(f"| {name} | {statistics.median(latencies) * 1000:.1f} ms | {max(latencies) * 1000:.1f} ms "
                    f"| {len(latencies)} |")
    return rows, extras


def watch_table(openbao_rows):
    S = "bench-watch"
    vault_dir = tempfile.mkdtemp(prefix="kc-bench-watch-")
    vault_env = dict(os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=f"{vault_dir}/vault.age",
                     KEYCHAIN_PASSPHRASE="bench", KEYCHAIN_VAULT_WORK_FACTOR="16")
    writers = {
        "Secret Service: keychain-cli `set`": (None, lambda i: ([KC, "-s", S, "set", "kc"], b"v%d" % i)),
        "Secret Service: `secret-tool store`": (None, lambda i: (
            ["secret-tool", "store", "--label=bench", "service", S, "username", "st"], b"v%d" % i)),
        "Secret Service: python `keyring set`": (None, lambda i: (
            [PY, "-m", "keyring", "set", S, "py"], b"v%d\n" % i)),
        "vault: keychain-cli `set`": (vault_env, lambda i: ([KC, "-s", S, "set", "vt"], b"v%d" % i)),
    }
    try:
        rows, extras = watch_latency(writers)
    finally:
        shutil.rmtree(vault_dir, ignore_errors=True)
    table = ["| writer | median | worst | of |", "|---|---|---|---|", *rows, *openbao_rows]
    if extras:
        noun = "line was" if extras == 1 else "lines were"
        table.append(f"\n({extras} extra {noun} printed for these writes.)")
    return "\n".join(table)
