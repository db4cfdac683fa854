"""What every table of `make bench` shares: the binaries, the run counts, and the timing of
whole processes (see bench.py's docstring)."""
import itertools, os, random, shutil, statistics, subprocess, sys, tempfile, time

KC = os.environ.get("KEYCHAIN_CLI", ".build/release/keychain-cli")
PY = "/usr/bin/python3"  # Debian's python, where python3-keyring lives
RUNS = int(os.environ.get("BENCH_RUNS", "30"))
MEMORY_RUNS = int(os.environ.get("BENCH_MEMORY_RUNS", "15"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "3"))
LIST_ITEMS = int(os.environ.get("BENCH_LIST_ITEMS", "1000"))
LARGE_RUNS = int(os.environ.get("BENCH_LARGE_RUNS", "5"))
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


def round_order(row, round_index):
    """The order of a row's commands in one round. Every command must follow each other one
    equally often: a run right after python keyring's (200 ms of CPU, and gnome-keyring still
    closing its session) is slower, and a rotated order put keychain-cli there in two rounds of
    three and secret-tool in one (measured: `set` 0.82x in the bench's order, 0.77x with
    secret-tool first). Rows of up to four commands go through all their orders in turn (30 runs
    of three commands are five full cycles); longer ones are shuffled with a fixed seed."""
    if len(row) <= 4:
        orders = list(itertools.permutations(row))
        return list(orders[round_index % len(orders)])
    shuffled = list(row)
    random.Random(round_index).shuffle(shuffled)
    return shuffled


def measure(row):
    """row: list of (name, argv or argv(run index), stdin, expected_exit) -> {name: [seconds]}"""
    results = {name: [] for name, *_ in row}
    for round_index in range(WARMUP + RUNS):
        for name, argv, stdin, expected in round_order(row, round_index):
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
        for name, argv in round_order(row, round_index):
            results[name].append(peak_memory(argv))
    return {name: statistics.median(values) for name, values in results.items()}
