"""Instruction counts of one client process, by valgrind's callgrind, for the `get` and `set` rows.

Wall time on a shared 2-core machine moves by 10-20% from run to run; the number of instructions a
process executes moves by less than 0.5%, whatever else the machine does, so they sit beside the
medians in RESULTS.md. Only the client is counted, not gnome-keyring's work for it. keychain-cli
is counted on a `strip --strip-debug` copy: valgrind 3.19 cannot read the DWARF 5 the Swift
toolchain writes (the code is the same bytes).
"""
import atexit, os, re, shutil, subprocess, sys, tempfile

VALGRIND = shutil.which("valgrind")


def count(argv, stdin_bytes=None, expected=0, env=None):
    """Instructions one run of argv executes (callgrind's "Collected" total)."""
    with tempfile.TemporaryDirectory(prefix="kc-callgrind-") as work:
        result = subprocess.run(
            [VALGRIND, "--tool=callgrind", f"--callgrind-out-file={work}/out", *argv],
            input=stdin_bytes or b"", capture_output=True, env=env)
        if result.returncode != expected:
            sys.exit(f"bench: under callgrind, {' '.join(argv)} exited {result.returncode}, expected {expected}:\n"
                     + result.stderr.decode(errors="replace")[-2000:])
        match = re.search(rb"Collected : (\d+)", result.stderr)
        if not match:
            sys.exit("bench: callgrind printed no total:\n" + result.stderr.decode(errors="replace")[-2000:])
        return int(match.group(1))


_stripped = {}


def stripped_copy(binary):
    """A copy of binary without its debug information, for valgrind 3.19: made once per run, in a
    folder removed when the benchmark ends."""
    if binary not in _stripped:
        directory = tempfile.mkdtemp(prefix="kc-stripped-")
        atexit.register(shutil.rmtree, directory, True)
        _stripped[binary] = os.path.join(directory, os.path.basename(binary))
        subprocess.run(["strip", "--strip-debug", "-o", _stripped[binary], binary], check=True)
    return _stripped[binary]


def counts(rows, keychain_cli):
    """rows: {title: [(tool, argv or argv(run), stdin, expected)]} -> {title: {tool: instructions}}.

    Each command runs once: the counts repeat (the same `get` twice: 12.30 M and 12.25 M for
    keychain-cli, 31.66 M and 31.54 M for secret-tool; within 0.5%). keychain-cli's argv[0] is
    replaced by the stripped copy. A command given as a function of the run index is asked for
    run 10_000, a key no timed run used.
    """
    if VALGRIND is None:
        sys.exit("bench: valgrind is needed for the instruction counts (apt-get install valgrind)")
    results = {}
    stripped = stripped_copy(keychain_cli)
    for title, row in rows.items():
        results[title] = {}
        for tool, argv, stdin, expected in row:
            argv = argv(10_000) if callable(argv) else argv
            argv = [stripped, *argv[1:]] if argv[0] == keychain_cli else argv
            results[title][tool] = count(argv, stdin, expected)
    return results
