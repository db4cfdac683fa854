#!/usr/bin/python3
"""The CSV rows of the bench: `keychain-cli import --format bitwarden FILE` of a Bitwarden CSV
export of BENCH_CSV_ENTRIES (default 100,000) logins, beside pass-import reading the same file,
and the peak memory of the import at BENCH_CSV_SMALL (default 10,000) and at BENCH_CSV_ENTRIES.

The file: `folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,
login_password,login_totp`, logins `entry-N` in folders of 100, each with a URL, a username, a
password and one custom field. keychain-cli imports into a new vault each run (one write, a low
scrypt work factor: the rows measure reading the file and storing its entries).

pass-import is measured twice, as there is no one command of it that does the same work:
- `pimport csv bitwarden FILE -o OUT.csv`, the whole tool a user runs (it reads the file, writes a
  plain CSV, and also rates every password with zxcvbn, which it cannot be told not to do): at
  BENCH_CSV_SMALL rows only, as zxcvbn takes it some 7 ms a password (12 minutes for 100,000);
- its Bitwarden CSV reader alone (`BitwardenCSV(FILE).parse()` in one python3), the fair
  counterpart of reading the file into entries, without writing anything.
keychain-cli's peak memory is also measured importing into a passphrase tree vault (one file per
secret, stored a batch at a time: what shows that import holds a batch of entries, not all of them;
the vault file must hold every secret in its one document). Every side must find every entry.
Writes OUT.json: {"entries", "small", "runs", "results":
{name: [seconds]}, "small results": {name: [seconds]}, "rss": {name: {rows: KiB}}}.

    bench/import_csv.py OUT.json
"""
import json, os, shutil, subprocess, sys, tempfile, time

from common import KC

ENTRIES = int(os.environ.get("BENCH_CSV_ENTRIES", "100000"))
SMALL = int(os.environ.get("BENCH_CSV_SMALL", "10000"))
RUNS = int(os.environ.get("BENCH_CSV_RUNS", "3"))
HEADER = "folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
READER = """
import sys
from pass_import.managers.bitwarden import BitwardenCSV
with BitwardenCSV(sys.argv[1]) as importer:
    importer.parse()
    print(len(importer.data))
"""


TREE = "keychain-cli, tree vault"


def make_csv(path, entries):
    """A Bitwarden CSV export of `entries` logins at `path`."""
    with open(path, "w", newline="") as file:
        file.write(HEADER)
        for number in range(entries):
            file.write(f"folder-{number // 100:04d},,login,entry-{number:06d},,\"pin: {number}\",0,"
                       f"https://example.com/{number},user-{number},password-{number},\n")


def environment(vault):
    return dict(os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=vault, KEYCHAIN_PASSPHRASE="bench",
                KEYCHAIN_VAULT_WORK_FACTOR="10", KEYCHAIN_TIMEOUT="600")


def peak_rss(argv, env):
    """The peak resident set of argv in KiB, measured by GNU time (see bench.py)."""
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], env=env, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"import_csv: {' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return int(done.stderr.decode().strip().splitlines()[-1])


def main(out):
    work = tempfile.mkdtemp(prefix="kc-bench-csv-")
    try:
        files = {rows: os.path.join(work, f"bitwarden-{rows}.csv") for rows in (SMALL, ENTRIES)}
        for rows, path in files.items():
            make_csv(path, rows)
        vault, output = os.path.join(work, "vault.age"), os.path.join(work, "out.csv")
        ours = environment(vault)

        def commands(path):
            return {
                "keychain-cli": ([KC, "-s", "csv", "import", "--format", "bitwarden", path], ours),
                "pimport": (["pimport", "-q", "csv", "bitwarden", path, "-o", output, "-f"], dict(os.environ)),
                "pass-import reader": (["python3", "-c", READER, path], dict(os.environ)),
            }

        def clean():
            for leftover in (vault, output):
                if os.path.exists(leftover):
                    os.unlink(leftover)

        def measure(rows, names):
            results = {name: [] for name in names}
            for round_index in range(RUNS):
                for name in names if round_index % 2 == 0 else list(reversed(names)):
                    clean()
                    argv, env = commands(files[rows])[name]
                    start = time.perf_counter()
                    done = subprocess.run(argv, env=env, capture_output=True)
                    results[name].append(time.perf_counter() - start)
                    if done.returncode != 0:
                        sys.exit(f"import_csv: {' '.join(argv)} exited {done.returncode}: "
                                 f"{done.stderr.decode()[-300:]}")
                    # Every side found every entry.
                    if name == "keychain-cli":
                        listed = subprocess.run([KC, "-s", "csv", "list"], env=ours, capture_output=True, check=True)
                        found = listed.stdout.count(b"\n")
                    elif name == "pimport":
                        found = open(output).read().count("\n") - 1
                    else:
                        found = int(done.stdout.decode().strip())
                    if found != rows:
                        sys.exit(f"import_csv: {name} found {found} of {rows} entries")
            return results

        results = measure(ENTRIES, ["keychain-cli", "pass-import reader"])
        small_results = measure(SMALL, ["keychain-cli", "pimport", "pass-import reader"])
        rss = {name: {} for name in small_results}
        tree = os.path.join(work, "tree")
        rss[TREE] = {}
        for rows, path in files.items():
            for name, (argv, env) in commands(path).items():
                if name == "pimport" and rows != SMALL:
                    continue
                clean()
                rss[name][rows] = peak_rss(argv, env)
            # A tree vault stores item by item, so import holds a batch of them, not all.
            shutil.rmtree(tree, ignore_errors=True)
            subprocess.run([KC, "vault", "init", tree], env=environment(tree), capture_output=True, check=True)
            rss[TREE][rows] = peak_rss(commands(path)["keychain-cli"][0], environment(tree))
        clean()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(out, "w") as file:
        json.dump({"entries": ENTRIES, "small": SMALL, "runs": RUNS, "results": results,
                   "small results": small_results, "rss": rss}, file)


def table(results):
    """The Markdown rows of OUT.json."""
    import statistics

    def medians(values):
        return {name: statistics.median(runs) for name, runs in values.items()}

    large, small = medians(results["results"]), medians(results["small results"])
    rss = {name: {int(rows): kib for rows, kib in values.items()} for name, values in results["rss"].items()}
    names = ("keychain-cli", "pimport", "pass-import reader")

    def cell(seconds, name):
        if name not in seconds:
            return "–"
        ratio = seconds["keychain-cli"] / seconds[name]
        return f"{seconds[name]:.2f} s" + ("" if name == "keychain-cli" else f" (**{ratio:.2f}×**)")

    lines = [
        f"| import of a Bitwarden CSV (median of {results['runs']}) | keychain-cli (vault file) | "
        "keychain-cli (tree vault) | pimport (whole tool) | pass-import's reader alone |",
        "|---|---|---|---|---|",
        f"| time, {results['small']:,} rows | " + " | ".join(cell(small, name) for name in (names[0], TREE, *names[1:]))
        + " |",
        f"| time, {results['entries']:,} rows | " + " | ".join(cell(large, name) for name in (names[0], TREE, *names[1:]))
        + " |",
    ]
    for rows in (results["small"], results["entries"]):
        lines.append(f"| peak RSS, {rows:,} rows | " + " | ".join(
            f"{rss[name][rows] / 1024:.0f} MiB" if rows in rss.get(name, {}) else "–"
            for name in (names[0], TREE, *names[1:])) + " |")
    return "\n".join(lines)


def import_csv_table():
    """The table of `make bench`: main() into a scratch file, its rows."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        main(out.name)
        with open(out.name) as file:
            return table(json.load(file))


if __name__ == "__main__":
    if len(sys.argv) == 2:
        main(sys.argv[1])
        with open(sys.argv[1]) as file:
            print(table(json.load(file)))
    else:
        sys.exit(__doc__)
