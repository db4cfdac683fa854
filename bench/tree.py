"""The tree vault's table of `make bench`: a write and a read that cost the same at 10 items and at
100,000 (one file each), listings and exports beside the single-file vault's, and `git merge` of two
branches of a 10,000-item tree vault (no merge driver runs: the branches changed different files).

Every vault here is a team vault opened with an age identity (no scrypt), so the rows measure the
layouts, not a passphrase. The items are written by `keychain-cli import` (one process per vault);
the 100,000-item vaults take a few minutes to make."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

from common import KC, measure

SMALL, LARGE, LISTED, CHANGED = 10, int(os.environ.get("BENCH_TREE_ITEMS", "100000")), 10_000, 100
LARGE_RUNS = int(os.environ.get("BENCH_TREE_RUNS", "10"))


def run(argv, stdin=None, env=None, cwd=None):
    result = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd)
    if result.returncode != 0:
        sys.exit(f"{argv[:6]} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


def document(count, prefix="k"):
    items = [{"service": "bench", "key": f"{prefix}{i:06d}", "encoding": "utf8", "secret": f"value-{i}-" + "x" * 32}
             for i in range(count)]
    return json.dumps({"format": "keychain-cli-export", "version": 1, "items": items}).encode()


def make_vaults(directory, identity, recipient, count):
    """A tree vault and a single-file vault, each holding `count` items; returns their argv prefixes."""
    tree, single = os.path.join(directory, f"tree-{count}"), os.path.join(directory, f"single-{count}.age")
    run([KC, "vault", "init", tree, "--recipient", recipient])
    base = [KC, "--backend", "vault", "--identity", identity, "-s", "bench"]
    on_tree, on_single = base[:1] + ["--vault", tree] + base[1:], base[:1] + ["--vault", single] + base[1:]
    run(on_single[:-2] + ["vault", "recipients", "add", recipient])
    for argv in (on_tree, on_single):
        run(argv + ["import"], stdin=document(count))
    return on_tree, on_single, tree


def ms(values):
    return statistics.median(values) * 1000


def merge_times(directory, identity, recipient, git_env):
    """`git merge` of two branches that each changed CHANGED different items of a LISTED-item tree
    vault: plain git, and git with `vault git-setup`'s attributes and driver configured."""
    times = {}
    for configured in (False, True):
        repository = os.path.join(directory, f"merge-{configured}")
        os.makedirs(repository)
        git = lambda *a: run(["git", "-C", repository, *a], env=git_env)
        git("init", "-q", "-b", "master")
        vault = os.path.join(repository, "secrets")
        run([KC, "vault", "init", vault, "--recipient", recipient])
        on_vault = [KC, "--backend", "vault", "--vault", vault, "--identity", identity, "-s", "bench"]
        run(on_vault + ["import"], stdin=document(LISTED))
        if configured:
            run(on_vault[:-2] + ["vault", "git-setup"], env=dict(os.environ, **git_env))
        git("add", "-A")
        git("commit", "-qm", "base")
        for branch, start in (("left", 0), ("right", CHANGED)):
            git("checkout", "-qb", branch, "master")
            changed = [{"service": "bench", "key": f"k{i:06d}", "encoding": "utf8", "secret": f"{branch}-{i}"}
                       for i in range(start, start + CHANGED)]
            run(on_vault + ["import", "--overwrite"], stdin=json.dumps(
                {"format": "keychain-cli-export", "version": 1, "items": changed}).encode())
            git("add", "-A")
            git("commit", "-qm", branch)
        git("checkout", "-q", "left")
        started = time.perf_counter()
        git("merge", "-q", "--no-edit", "right")
        times[configured] = time.perf_counter() - started
        values = {f"k{i:06d}" for i in range(2 * CHANGED)}
        exported = json.loads(run(on_vault + ["export", "--yes"]))
        merged = {i["key"]: i["secret"] for i in exported["items"] if i["key"] in values}
        expected = {f"k{i:06d}": ("left" if i < CHANGED else "right") + f"-{i}" for i in range(2 * CHANGED)}
        if merged != expected:
            sys.exit("the merged tree vault does not hold both branches' values")
    return times


def tree_table():
    directory = tempfile.mkdtemp(prefix="kc-bench-tree-")
    git_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": directory, "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
    try:
        identity = os.path.join(directory, "identity.txt")
        recipient = run([KC, "vault", "keygen", "-o", identity]).decode().strip()
        rows = []
        sizes = {}
        for count in (SMALL, LISTED, LARGE):
            started = time.perf_counter()
            sizes[count] = make_vaults(directory, identity, recipient, count)
            print(f"tree bench: {count} items made in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        results = {}
        for count in (SMALL, LARGE):
            on_tree, on_single, _ = sizes[count]
            row = [
                ("tree get", on_tree + ["get", "k000003"], None, 0),
                ("tree set", on_tree + ["set", "k000004"], b"new value", 0),
                ("single get", on_single + ["get", "k000003"], None, 0),
                ("single set", on_single + ["set", "k000004"], b"new value", 0),
            ]
            results[count] = measure(row) if count == SMALL else measure_few(row)
        on_tree, on_single, _ = sizes[LISTED]
        listing = measure_few([
            ("tree list", on_tree + ["list"], None, 0), ("single list", on_single + ["list"], None, 0),
            ("tree list --json", on_tree + ["list", "--json"], None, 0),
            ("single list --json", on_single + ["list", "--json"], None, 0),
            ("tree export", on_tree + ["export", "--yes"], None, 0),
            ("single export", on_single + ["export", "--yes"], None, 0),
        ])
        merges = merge_times(directory, identity, recipient, git_env)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    small, large = results[SMALL], results[LARGE]
    lines = [
        f"\n## Tree vaults: one file per item\n",
        f"| operation | tree vault, {SMALL} items | tree vault, {LARGE:,} items | ÷ | single-file vault, {SMALL} items "
        f"| single-file vault, {LARGE:,} items | ÷ |",
        "|---|---|---|---|---|---|---|",
    ]
    for operation in ("get", "set"):
        t0, t1 = ms(small[f"tree {operation}"]), ms(large[f"tree {operation}"])
        s0, s1 = ms(small[f"single {operation}"]), ms(large[f"single {operation}"])
        lines.append(f"| `{operation}` | {t0:.1f} ms | {t1:.1f} ms | **{t1 / t0:.2f}×** | {s0:.1f} ms | {s1:.1f} ms "
                     f"| **{s1 / s0:.0f}×** |")
    lines += ["", f"| {LISTED:,} items | tree vault | single-file vault | ÷ |", "|---|---|---|---|"]
    for operation in ("list", "list --json", "export"):
        t, s = ms(listing[f"tree {operation}"]), ms(listing[f"single {operation}"])
        lines.append(f"| `{operation}` | {t:.0f} ms | {s:.0f} ms | **{t / s:.2f}×** |")
    lines.append(
        f"\n`git merge` of two branches that each changed {CHANGED} different items of a {LISTED:,}-item tree "
        f"vault: {merges[False] * 1000:.0f} ms with plain git, {merges[True] * 1000:.0f} ms with `vault git-setup`'s "
        f"attributes and merge driver configured (**{merges[True] / merges[False]:.2f}×**: the driver never runs, "
        "git merges the files itself); every value of both branches read back after it.")
    lines.append(
        f"\nHow: medians of {LARGE_RUNS} interleaved runs at {LARGE:,} and {LISTED:,} items (30 at {SMALL}); every "
        "vault is a team vault opened with an age identity, so no scrypt runs; `set` replaces an existing item. "
        "A tree vault's `get` reads and decrypts one file and its `set` writes one (under a lock on the "
        "directory), so their cost does not grow with the vault; the single-file vault decrypts the whole "
        "document on `get` and re-encrypts it on `set`. `list` of a tree reads names only (no decryption); "
        "`list --json` and `export` decrypt every item's file (one X25519 each), where the single-file vault "
        "decrypts one file.")
    return "\n".join(lines)


def measure_few(row):
    """`measure` with LARGE_RUNS runs per command."""
    import common
    runs, common.RUNS = common.RUNS, LARGE_RUNS
    try:
        return measure(row)
    finally:
        common.RUNS = runs


if __name__ == "__main__":
    print(tree_table())
