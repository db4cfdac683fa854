"""Where `get` goes: one `get` and one `secret-tool lookup` beside the floors a client cannot go
below on this machine (issue 45): starting a process, loading the libraries both link, and one
D-Bus call to the same gnome-keyring. Times and peak memory are medians of interleaved runs;
system calls and the dynamic loader's work are counted on one run each."""
import os, re, statistics, subprocess, sys, tempfile

from common import KC, MEMORY_RUNS, RUNS, WARMUP, round_order, spawn

# A program that links the given libraries (no-as-needed: each is loaded) and does nothing: the
# price of loading libsecret, GIO, GObject, GLib and libgcrypt (what secret-tool links), or
# libgcrypt alone (what a keychain-cli `get` loads; the rest it loads on first use, which a `get`
# on the Secret Service never makes).
LIBRARIES_ONLY = "int main(void) { return 0; }\n"


def libraries_only_program(directory, name, packages):
    source, program = os.path.join(directory, "empty.c"), os.path.join(directory, name)
    with open(source, "w") as file:
        file.write(LIBRARIES_ONLY)
    libraries = subprocess.run(["pkg-config", "--libs", *packages],
                               check=True, capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", program, source, "-Wl,--no-as-needed", *libraries], check=True)
    return program


def peak_kib(argv, expected):
    with tempfile.NamedTemporaryFile("r") as report:
        code = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, *argv],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if code != expected:
            sys.exit(f"bench: {' '.join(argv)} exited {code} under /usr/bin/time, expected {expected}")
        return int(report.read().split()[-1].strip())


def system_calls(argv):
    """How many system calls one run makes, its child processes' included (strace -c -f)."""
    with tempfile.NamedTemporaryFile("r") as report:
        subprocess.run(["strace", "-f", "-c", "-o", report.name, *argv],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = [line for line in report.read().splitlines() if line.rstrip().endswith("total")]
        return int(total[-1].split()[3]) if total else None


def loader(argv):
    """The dynamic loader's relocations and its share of the start, in ms (LD_DEBUG=statistics)."""
    environment = dict(os.environ, LD_DEBUG="statistics")
    text = subprocess.run(argv, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True).stderr
    relocations = sum(int(n) for n in re.findall(r"number of relocations:\s+(\d+)", text))
    cycles = re.search(r"total startup time in dynamic loader:\s+(\d+) cycles", text)
    return relocations, int(cycles.group(1)) if cycles else None


def floor_table(service):
    with tempfile.TemporaryDirectory() as directory:
        only = libraries_only_program(directory, "libraries-only", ["libsecret-1", "gio-2.0", "libgcrypt"])
        gcrypt = libraries_only_program(directory, "libgcrypt-only", ["libgcrypt"])
        search = ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.secrets",
                  "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SearchItems",
                  f"dict:string:string:service,{service},username,K"]
        row = [
            ("`/bin/true`: starting a process", ["/bin/true"], 0),
            ("a C program that only loads libsecret, GIO, GObject, GLib and libgcrypt", [only], 0),
            ("a C program that only loads libgcrypt", [gcrypt], 0),
            ("`secret-tool` printing its usage", ["secret-tool"], 2),
            ("`keychain-cli --version`", [KC, "--version"], 0),
            ("one D-Bus call: `dbus-send` of a `SearchItems`", search, 0),
            ("`keychain-cli get`", [KC, "-s", service, "get", "K"], 0),
            ("`secret-tool lookup`", ["secret-tool", "lookup", "service", service, "username", "K"], 0),
        ]
        times = {name: [] for name, _, _ in row}
        for round_index in range(WARMUP + RUNS):
            for name, argv, expected in round_order(row, round_index):
                seconds, code = spawn(argv)
                if code != expected:
                    sys.exit(f"bench: {' '.join(argv)} exited {code}, expected {expected}")
                if round_index >= WARMUP:
                    times[name].append(seconds)
        memory = {name: [] for name, _, _ in row}
        for round_index in range(MEMORY_RUNS):
            for name, argv, expected in round_order(row, round_index):
                memory[name].append(peak_kib(argv, expected))
        lines = ["| process | time | peak memory | system calls | relocations, loader time |", "|---|---|---|---|---|"]
        for name, argv, _ in row:
            relocations, cycles = loader(argv)
            calls = system_calls(argv)
            lines.append(
                f"| {name} | {statistics.median(times[name]) * 1000:.2f} ms "
                f"| {statistics.median(memory[name]) / 1024:.1f} MiB | {calls if calls is not None else '—'} "
                f"| {relocations:,}, {cycles / 1e6:.1f} M cycles |" if cycles else
                f"| {name} | {statistics.median(times[name]) * 1000:.2f} ms "
                f"| {statistics.median(memory[name]) / 1024:.1f} MiB | {calls if calls is not None else '—'} | — |")
        def ratio(table, first, second):
            return statistics.median(table[first]) / statistics.median(table[second])
        version, usage, get, lookup = ("`keychain-cli --version`", "`secret-tool` printing its usage",
                                       "`keychain-cli get`", "`secret-tool lookup`")
        call, true = "one D-Bus call: `dbus-send` of a `SearchItems`", "`/bin/true`: starting a process"
        lines += ["", f"`keychain-cli --version` ÷ secret-tool's usage: **{ratio(memory, version, usage):.2f}×** "
                  f"the peak memory, **{ratio(times, version, usage):.2f}×** the time. `get` ÷ `lookup`: "
                  f"**{ratio(memory, get, lookup):.2f}×** the peak memory, **{ratio(times, get, lookup):.2f}×** "
                  f"the time; `get` takes **{ratio(times, get, call):.2f}×** the time of one `dbus-send` call "
                  f"and **{ratio(times, get, true):.2f}×** that of `/bin/true`."]
        return "\n".join(lines)


if __name__ == "__main__":
    print(floor_table(sys.argv[1] if len(sys.argv) > 1 else "bench"))
