"""Two builds of keychain-cli side by side on the Secret Service: `make bench-compare
OLD=path/to/keychain-cli` times `get`, `set` and `list` of the release build beside OLD, in one
run against one private gnome-keyring, the two interleaved as bench.py interleaves the tools
(common.measure), and prints a table of medians. For a change to a hot path: the two columns
should agree within noise, or the new one be faster. Run by scripts/with-keyring (Makefile)."""
import os, statistics, sys

from common import KC, LIST_ITEMS, RUNS, measure, spawn


def main():
    old = os.environ.get("OLD")
    if not old or not os.access(old, os.X_OK):
        sys.exit("bench-compare: OLD must name another keychain-cli binary (make bench-compare OLD=…)")
    builds = [("new", KC), ("old", old)]
    shared, listed = "bench-compare", "bench-compare-list"
    for name, binary in builds:
        seconds, code = spawn([binary, "--service", shared, "set", name], b"value\n")
        if code != 0:
            sys.exit(f"bench-compare: {binary} set exited {code}")
    for index in range(LIST_ITEMS):
        spawn([KC, "--service", listed, "set", f"k{index}"], b"v\n")
    rows = {
        "`get` of an existing item": [
            (name, [binary, "--service", shared, "get", name], None, 0) for name, binary in builds],
        "`get` of a missing item": [
            (name, [binary, "--service", shared, "get", "missing"], None, 1) for name, binary in builds],
        "`set` replacing a value": [
            (name, [binary, "--service", shared, "set", name], b"new value\n", 0) for name, binary in builds],
        "`set` of a new key": [
            (name, (lambda run, binary=binary, name=name: [binary, "--service", shared, "set", f"{name}-{run}"]),
             b"v\n", 0) for name, binary in builds],
        f"`list` of a service holding {LIST_ITEMS:,} items": [
            (name, [binary, "--service", listed, "list"], None, 0) for name, binary in builds],
        f"`list --json` of a service holding {LIST_ITEMS:,} items": [
            (name, [binary, "--service", listed, "list", "--json"], None, 0) for name, binary in builds],
    }
    print(f"| operation (median of {RUNS}) | new: {KC} | old: {old} | new ÷ old |")
    print("|---|---|---|---|")
    for title, row in rows.items():
        results = measure(row)
        new, before = statistics.median(results["new"]), statistics.median(results["old"])
        print(f"| {title} | {new * 1000:.1f} ms | {before * 1000:.1f} ms | {new / before:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
