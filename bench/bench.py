#!/usr/bin/python3
"""Side-by-side benchmark: keychain-cli against secret-tool and python keyring.

Run through `make bench`, inside a private gnome-keyring session (scripts/with-keyring).
Every run is a whole process started with posix_spawn; its wall time is measured around
spawn+wait. Commands of one row are interleaved, each round in another order, so that machine
drift hits every side alike and each command follows each other one equally often. Peak memory is measured in separate runs under GNU time: the
ru_maxrss of a child posix_spawned from this Python starts at Python's own resident size
(13 MiB), above what secret-tool ever uses, while GNU time forks its child from a 1 MiB process.
"""
import datetime, json, os, platform, statistics, subprocess

import instructions
from backends import openbao_table, vault_table
from tree import tree_table
from signed import signed_table
from references import references_table
from ssh_agent import ssh_agent_table
from floor import floor_table
from common import KC, LARGE_RUNS, LIST_ITEMS, MEMORY_RUNS, PY, RUNS, WARMUP, measure, measure_memory
from masking import masking_table
from scan import scan_table
from import_csv import import_csv_table
from serve import serve_table
from serve_large import table as serve_large_table
from import_pass import table as import_pass_table
from watch import watch_table


def large_rows(kc, st):
    """The 5,000-item rows bench/large.py measured in a session of their own (make bench runs it
    first); secret-tool's cell gives its failures, and the ratio is then an upper bound."""
    with open(os.environ.get("BENCH_LARGE_RESULTS", ".build/bench/large.json")) as file:
        large = json.load(file)
    rows = {}
    failed = [code for code in large["secret-tool exits"] if code != 0]
    for name in ("list", "list --json", "export --yes"):
        title = f"`{name}` of a service holding {large['items']:,} items (median of {large['runs']})"
        rows[title] = {kc: large["results"][name], st: large["results"]["secret-tool"],
                       "secret-tool failures": len(failed), "of": len(large["secret-tool exits"])}
    return rows


def main():
    def run(argv, data=None):
        done = subprocess.run(argv, input=data, capture_output=True)
        if done.returncode != 0:  # say why: a failed setup step is a finding too
            raise SystemExit(f"bench: {' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
        return done
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
    client_rows = lambda rows: {t: [c for c in row if c[0] != py] for t, row in rows.items()}
    counted = instructions.counts(client_rows(core_rows(small)), KC)
    run([KC, "-s", L, "reset", "--yes"])
    # One import rather than LIST_ITEMS processes: the same items, and a setup that took 1,000
    # `set` runs met gnome-keyring quitting mid-way twice (exit 69 at item 884, then 583).
    items = [{"service": L, "key": f"key-{i:04d}", "encoding": "utf8", "secret": f"v{i}"} for i in range(LIST_ITEMS)]
    run([KC, "import"], json.dumps({"format": "keychain-cli-export", "version": 1, "items": items}).encode())
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
    counted.update(instructions.counts(client_rows(core_rows(large)), KC))
    measured.update(large_rows(kc, st))
    memory_row = [(name, argv) for name, argv, _, _ in rows[f"`get` of an existing item ({large})"]]
    rss = {name: kib / 1024 for name, kib in measure_memory(memory_row + [("floor", ["/bin/true"])]).items()}

    def ms(values):
        return statistics.median(values) * 1000

    lines = [
        "| operation | keychain-cli | secret-tool | python keyring | keychain-cli ÷ secret-tool "
        "| instructions: keychain-cli, secret-tool (÷) |",
        "|---|---|---|---|---|---|",
    ]
    for title, result in measured.items():
        cells = [f"{ms(result[n]):.1f} ms" if result.get(n) else "—" for n in (kc, st, py)]
        ratio = f"**{ms(result[kc]) / ms(result[st]):.2f}×**" if result.get(st) else "—"
        if result.get("secret-tool failures"):  # it gave up: its time is a lower bound
            cells[1] = f"fails ({result['secret-tool failures']} of {result['of']}) after {cells[1]}"
            ratio = f"**< {ms(result[kc]) / ms(result[st]):.2f}×**"
        counts = counted.get(title)
        cells.append(f"{counts[kc] / 1e6:.1f} M, {counts[st] / 1e6:.1f} M (**{counts[kc] / counts[st]:.2f}×**)"
                     if counts else "—")
        lines.append(f"| {title} | {cells[0]} | {cells[1]} | {cells[2]} | {ratio} | {cells[3]} |")
    lines.append(
        f"| peak memory of `get` (max RSS) | {rss[kc]:.1f} MiB | {rss[st]:.1f} MiB | {rss[py]:.1f} MiB "
        f"| **{rss[kc] / rss[st]:.2f}×** | — |")
    table = "\n".join(lines)
    print(table)
    floor_rows = floor_table(S)
    print("\n" + floor_rows)
    serve_rows, serve_memory = serve_table(L)
    print("\n" + serve_rows + "\n" + serve_memory)
    with open(os.environ.get("BENCH_SERVE_RESULTS", ".build/bench/serve-large.json")) as file:
        serve_large = json.load(file)
    serve_large_rows, serve_parts = serve_large_table(serve_large)
    print("\n" + serve_large_rows + "\n" + serve_parts)
    with open(os.environ.get("BENCH_PASS_RESULTS", ".build/bench/import-pass.json")) as file:
        pass_rows = import_pass_table(json.load(file))
    print("\n" + pass_rows)
    team_table = vault_table(S)
    print("\n" + team_table)
    tree_rows = tree_table()
    print(tree_rows)
    signed_rows = signed_table()
    print(signed_rows)
    references_rows = references_table()
    print(references_rows)
    agent_rows = ssh_agent_table()
    print(agent_rows)
    bao_version, openbao_watch_rows, bao_table = openbao_table()
    print("\n" + bao_table)
    watch_rows = watch_table(openbao_watch_rows)
    print("\n" + watch_rows)
    mask_rows = masking_table()
    print("\n" + mask_rows)
    scan_rows = scan_table()
    print("\n" + scan_rows)
    import_rows = import_csv_table()
    print("\n" + import_rows)
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
  warm-up rounds. The commands of a row ran interleaved, each round in another of their orders,
  so machine drift hits every column alike and each command followed each other one (python
  keyring's runs slow the next one) equally often. The ratio is keychain-cli's median over secret-tool's:
  below 1 means keychain-cli is faster.
- All tools run against the same private gnome-keyring and read the very same item; `set`
  replacing a value replaces one item per tool; `set` of a new key stores another key every run
  ({RUNS + WARMUP} per tool and keyring size, left in place); `list` and `secret-tool search
  --all` read the same {LIST_ITEMS:,} items (secret-tool also fetches their secrets, which is what
  its search offers).
- Instructions: what one client process executes, counted by valgrind's callgrind (one run each;
  it moves by less than 0.5% where wall time moves by 10-20%), for keychain-cli and secret-tool; not
  gnome-keyring's work for them (bench/instructions.py).
- The last three rows ("median of {LARGE_RUNS}") ran in a private keyring session of their own,
  whose daemon loaded the items from a keyring file written beforehand (bench/large.py): storing
  5,000 items one by one would take it about 11 minutes. Each secret-tool search there is
  compared with the three keychain-cli commands of its round (one warm-up round, then
  {LARGE_RUNS}). Where secret-tool fails (libsecret gives each D-Bus call 25 s), its time to
  failure is shown and the ratio is an upper bound. At this size gnome-keyring's CPU is the
  whole cost: each property it reads for a client costs it time in proportion to the items it
  holds (about 0.25-0.3 ms per property at 1,000 items, 0.7-1.1 ms at 5,000, machine to
  machine), and `list --json` needs four per item (attributes, label, created, modified, each
  its own `Properties.Get`: `GetAll` would read six), `list` and `export` one (`export` reads
  the items its listing found, and their secrets in `GetSecrets` calls of 1,000).
- Keyring size: gnome-keyring rewrites and fsyncs its whole file for every change, so a write
  costs more in a larger keyring, for every tool. Rows marked "a small keyring" ran first, when
  the keyring held only the shared item, each tool's own and the new keys of that row; rows
  marked "{LIST_ITEMS:,} items in the keyring" ran after {LIST_ITEMS:,} more items were stored.
- Peak memory is the maximum resident set size that GNU time reports (`/usr/bin/time -f %M`),
  median of {MEMORY_RUNS} interleaved runs of each `get`. GNU time's own floor, `/bin/true`
  measured the same way, is {rss["floor"]:.1f} MiB. (A child started straight from this Python
  script would report at least Python's own 13 MiB, because Linux counts the resident size the
  child had before `exec`; this benchmark's memory column did so until 2026-11-22.)

## Where `get` goes: the floors beside it

{floor_rows}

Each process against the same private gnome-keyring and item as the table above; time: median of
{RUNS} interleaved runs, after {WARMUP} warm-up rounds; memory: median of {MEMORY_RUNS}, under GNU
time (whose own floor is the `/bin/true` row). The C programs are `int main(void) {{ return 0; }}`
linked with `--no-as-needed` against pkg-config's libsecret-1, gio-2.0 and libgcrypt (what
secret-tool links: what loading them costs any client that links them), and against libgcrypt
alone (what a keychain-cli `get` loads: it loads the others on first use, and a `get` on the
Secret Service, which speaks D-Bus itself, never uses them). `dbus-send`
links libdbus only and makes one round trip (a `SearchItems` of the item), the least a Secret
Service client can do. System calls: one run under `strace -f -c` (threads included), which counts
the calls after `execve`; relocations and the dynamic loader's time (in CPU cycles): one run with
`LD_DEBUG=statistics`. Debian builds these libraries with `-z now`, so every symbol of each is bound
at load whether it is used or not.

## `serve`: keychain-cli as the Secret Service, against gnome-keyring

{serve_rows}

The same clients against two providers, each on its own session bus: gnome-keyring (the private
session of the table above, holding its {LIST_ITEMS:,} list items and the other rows' items) and
`keychain-cli --backend vault serve` of a vault holding the same {LIST_ITEMS:,} items (exported from
gnome-keyring). secret-tool opens the encrypted session; `search --all` reads every item's
attributes, label, dates and secret; `list --json` is keychain-cli's Secret Service backend, which
reads every item's properties with one `GetManagedObjects` call where the provider offers D-Bus's
ObjectManager (serve does) and with four pipelined `Properties.Get` per item where it does not
(gnome-keyring). secret-tool's calls are its own whichever provider answers: per item a D-Bus
proxy (two AddMatch, StartServiceByName, GetNameOwner and a RemoveMatch to the bus) then GetAll
and GetSecret, so its own CPU time (about 0.4 s for 1,000 items, measured from /proc) bounds what
any provider can reach there. Medians of {RUNS} interleaved runs. Peak memory of `serve` (VmHWM, after those rows, and after a
`search --all` and a `list --json` of a vault ten times larger): {serve_memory}.

### `serve` holding {serve_large["items"]:,} items

{serve_large_rows}

bench/serve_large.py, in private sessions of its own: gnome-keyring holding {serve_large["items"]:,} items
of one service, loaded from a keyring file written before it started (as bench/large.py writes it),
and another gnome-keyring holding the same items in its session collection (created through D-Bus
by python SecretStorage; kept in memory only); `keychain-cli serve` of a vault holding them (imported
in one write), as a provider (`--no-mask`: a provider with no command's output to mask, as the
systemd unit runs it), then as `serve -- COMMAND`, which keeps every secret's masked forms (as is,
base64 at three offsets, JSON-escaped and URL-encoded) to hide them in the command's output. Lookups: medians of {RUNS}
interleaved runs of `secret-tool lookup` of the last item; memory: VmHWM and VmRSS from
/proc after the lookups. The items' own bytes (key, secret, attributes) are about 1 MiB. Where serve's
resident memory goes, by mapping (/proc/PID/smaps): {serve_parts}. The binary's part is the pages
of its code that serve runs (GDBus's Swift side, the provider, the vault's age and JSON), with
those the kernel maps around each page reached, and its relocated data; the libraries' part is GLib, GIO, GObject, libgcrypt and libc;
the heap holds serve's index of the items (number, address, dates and revision per item; the
attributes and label of an item written without details are made when a client asks), the vault's
decoded entries, and the vault watcher's SHA-256 fingerprint per item; the anonymous part is GDBus's
and the watcher's threads (their stacks and malloc arenas).

## Moving in: a pass store

{pass_rows}

bench/import_pass.py: a pass store made in a throwaway GNUPGHOME with a key without a passphrase,
each entry a password, a `login:` and a `url:` line, in folders of 100. `keychain-cli import
--format pass` decrypts each entry with gpg (the first alone, then four at a time) and stores them
all in a new vault in one write (a low scrypt work factor: the row measures reading the store);
pass-import 3.5 (`pimport csv pass STORE`) reads each entry with `pass show` and writes a CSV file.
Each found every entry; runs interleaved.

## Vaults: a team vault's identity against a passphrase's scrypt

{team_table}

The same one-item vault read three ways: keychain-cli with an age X25519 identity (`--identity`,
one X25519 exchange), keychain-cli with the passphrase at age's default work factor (scrypt
N = 2^18, 256 MiB), and the Secret Service `get` of the table above; `age -d -i` (Go) decrypts
the team vault for comparison. Medians of {RUNS} interleaved runs; memory of {MEMORY_RUNS}.

{tree_rows}
{signed_rows}
{references_rows}
{agent_rows}

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
Service: the collection's D-Bus signal (keychain-cli's own for its `SetSecret`, sent while
gnome-keyring answers that call, so its line often comes before the writer has exited); the vault:
inotify, then a re-read of the file. Its scrypt work factor is 2^16 (about 0.2 s here): each
writer process pays it once, the watcher only at its start, since the writers keep the header.
OpenBao: a read of the secret every 0.2 s; each write there lands just after a read (the next
write starts when the last line came), so its row shows the poll's worst case, close to the
interval, rather than the average (half of it). A write by python keyring shows a negative time:
its line comes about 20 ms before the interpreter has exited.

## `exec`: masked output

{mask_rows}

A command that writes 1 GiB of log-like text (lines of base64, 64 MiB written 16 times), read
through a pipe by the benchmark, as it is, through `cat`, and run by `keychain-cli exec` with
three secrets mapped (a token, a passphrase, a three-line key): with `--no-mask` (keychain-cli
replaced by the command) and masked (keychain-cli reads the command's output and writes it on
with every form of the secrets hidden); then masked with 1,000 secrets loaded (`--from` a
service of 999 secrets as CI holds them, fixed by a seed: tokens, passwords with punctuation,
base64 keys, three-line keys; and the worst case for a matcher, `a`×100,001 + `b`), which
includes reading them and building the automaton of their forms (about 0.13 s). The second table:
256 MiB of each kind of output, through `cat | cat` and masked for the same 1,000 secrets (MB is
10^6 bytes): the run of `a` keeps a form 100,001 bytes deep open all along, and the base64 of a
run of `a` is masked whole (the shifted base64 of `a`×100,001 + `b` cannot be told from it), so
both pass through the automaton at every byte. Medians of 5 interleaved runs
(`BENCH_MASK_RUNS`).

## `scan`: stored secrets in a tree, beside grep

{scan_rows}

A tree of 1 GiB (16 files of 64 MiB of log-like text: lines of base64, half of them in a
subdirectory) with three of the secrets planted in it, read from the page cache (each command
runs once before the timed runs). `keychain-cli scan --from many` with 1,000 secrets loaded from
a vault (the masking table's 999 as CI holds them, and a token; not the matcher's worst case),
which includes reading them and building the automaton of their forms; beside
`grep -rnF -f values.txt` (`LC_ALL=C`) of their plain values, each line of a secret of several a
pattern of its own: grep looks for fewer forms than scan (no base64, wrapped or not, no URL or
JSON escapes). MB is 10^6 bytes. The second table: scan's peak RSS (GNU time's `%M`) on four of
the files (256 MiB) and on the whole tree: memory does not grow with the input. Medians of 5
interleaved runs (`BENCH_SCAN_RUNS`).

## import: 100,000 rows of a Bitwarden CSV, beside pass-import

{import_rows}

A Bitwarden CSV export (`folder,favorite,type,name,notes,fields,reprompt,login_uri,…`) of
logins in folders of 100, each with a URL, a username, a password and a custom field, written by
bench/import_csv.py. keychain-cli imports it into a new vault file each run (`--format bitwarden`:
the file read twice, a row at a time — once to check every row and decide the keys, then again
as the entries are stored, into a vault file in its one write; scrypt work factor 10), and, for
its peak memory, into a new passphrase tree vault (one run: stored a thousand entries at a time,
item by item). pass-import has no command doing only that: `pimport csv bitwarden FILE -o OUT.csv`
is the whole tool a user runs (it also rates every password with zxcvbn, which cannot be turned
off: 12 minutes for 100,000, so measured at 10,000 rows), and its Bitwarden reader alone
(`BitwardenCSV(FILE).parse()`) reads the file into entries and writes nothing. Every side must
find every entry. Peak RSS is GNU time's `%M`. Medians of 3 interleaved runs (`BENCH_CSV_RUNS`,
`BENCH_CSV_ENTRIES`, `BENCH_CSV_SMALL`).

## Inside one process: the `Keychain` cache

{in_process}

Measured by `keychain-bench` (bench/keychain-bench) against the same private keyring: the
uncached read clears the cache first, so it pays the D-Bus round trips (search, secret); the
cached read is a dictionary lookup under a lock (a pthread mutex), timed in batches of 1,000.
"""
    out = os.environ.get("BENCH_RESULTS", "bench/RESULTS.md")
    with open(out, "w") as f:
        f.write(report)
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
