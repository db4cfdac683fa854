"""The references table of `make bench`: `exec` reading 20 `keychain://` references from a .env
file, beside the same 20 secrets given as `--env` mappings, and `env --shell bash` printing
them for eval (direnv's use, on every prompt).

One team vault opened with an age X25519 identity (no scrypt), holding the 20 secrets; each row
runs `true` (exec) or prints the lines (env), so what differs is how the secrets are named."""
import os, shutil, statistics, subprocess, sys, tempfile

from common import KC, RUNS, measure

COUNT = 20


def references_table():
    directory = tempfile.mkdtemp(prefix="kc-bench-references-")
    try:
        identity, vault = os.path.join(directory, "identity.txt"), os.path.join(directory, "team.age")
        recipient = subprocess.run([KC, "vault", "keygen", "-o", identity], check=True, capture_output=True,
                                   text=True).stdout.strip()
        base = [KC, "--backend", "vault", "--vault", vault, "--identity", identity, "-s", "bench"]
        subprocess.run(base[:-2] + ["vault", "recipients", "add", recipient], check=True, capture_output=True)
        lines = "".join(f'{{"service": "bench", "key": "secret-{i:02d}", "encoding": "utf8", '
                        f'"secret": "value-{i:02d}-0123456789abcdef"}},' for i in range(COUNT))
        document = '{"format": "keychain-cli-export", "version": 1, "items": [' + lines.rstrip(",") + "]}"
        subprocess.run(base + ["import"], input=document.encode(), check=True, capture_output=True)
        env_file = os.path.join(directory, ".env.keychain")
        with open(env_file, "w") as file:
            file.write("".join(f"SECRET_{i:02d}=keychain://bench/secret-{i:02d}\n" for i in range(COUNT)))
        mappings = [argument for i in range(COUNT) for argument in ("--env", f"SECRET_{i:02d}=secret-{i:02d}")]
        inherited = {f"SECRET_{i:02d}": f"keychain://bench/secret-{i:02d}" for i in range(COUNT)}
        rows = {
            "exec, 20 `--env` mappings": base + ["exec"] + mappings + ["--", "true"],
            "exec, a .env of 20 references": base + ["exec", "--env-file", env_file, "--", "true"],
            "env --shell bash, 20 references": base + ["env", "--env-file", env_file, "--shell", "bash"],
        }
        result = measure([(name, argv, None, 0) for name, argv in rows.items()])
        # The environment's references (op run's rule) through a small wrapper that sets them.
        wrapper = os.path.join(directory, "with-references")
        with open(wrapper, "w") as file:
            exports = " ".join(f"{name}={value}" for name, value in inherited.items())
            file.write(f"#!/bin/sh\nexec env {exports} \"$@\"\n")
        os.chmod(wrapper, 0o755)
        inherited_row = measure([
            ("exec, 20 references in its environment", [wrapper] + base + ["exec", "--", "true"], None, 0),
            ("exec, 20 `--env` mappings (through the same wrapper)", [wrapper] + base + ["exec"] + mappings
             + ["--", "true"], None, 0),
        ])
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    ms = {name: statistics.median(values) * 1000 for name, values in {**result, **inherited_row}.items()}
    names = list(rows) + list(inherited_row)
    mapped, through = ms[names[0]], ms[names[4]]
    table = ["\n## References: exec and env with 20 `keychain://` references\n",
             "| command | median | ÷ 20 `--env` mappings |", "|---|---|---|"]
    for name in names:
        floor = through if "wrapper" in name or "environment" in name else mapped
        table.append(f"| {name} | {ms[name]:.1f} ms | **{ms[name] / floor:.2f}×** |")
    table += ["", f"How: a team vault (age X25519 identity, no scrypt) holding {COUNT} secrets; each exec runs "
              f"`true` under masking, env prints the 20 lines for bash. The environment's rows start through a "
              f"`/bin/sh` wrapper that sets the 20 variables, the same for both. Medians of {RUNS} interleaved "
              f"runs. Targets: references ≤ 1.3× the mappings and ≤ 30 ms; `env` ≤ 30 ms."]
    return "\n".join(table)


if __name__ == "__main__":
    print(references_table())
