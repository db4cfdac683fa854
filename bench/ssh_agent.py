"""The ssh-agent table of `make bench`: `ssh-keygen -Y sign` of a small file through
keychain-cli's ssh-agent and through OpenSSH's own ssh-agent holding the same keys (ed25519 and
RSA-3072), and each agent's peak memory (VmHWM) once it has served every run.

keychain-cli's agent serves the keys of a vault (read once, at its start, as every agent of ours
does); OpenSSH's got the same key files by ssh-add. Both in the foreground on sockets of their
own; each signature is a new ssh-keygen process, so what differs is the agent's answer."""
import os, shutil, signal, statistics, subprocess, tempfile, time

from common import KC, RUNS, measure

MESSAGE = b"a small file to sign\n" * 10


def start_agent(argv, socket, environment=None):
    agent = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=environment)
    deadline = time.monotonic() + 30
    while not os.path.exists(socket):
        if time.monotonic() > deadline or agent.poll() is not None:
            raise SystemExit(f"bench: the agent {argv[0]} did not start")
        time.sleep(0.01)
    return agent


def memory_kib(pid):
    """The peak resident set (VmHWM) and the private dirty memory (smaps_rollup: what the process
    wrote itself, not the code it maps) of process pid, in KiB."""
    def field(path, name):
        with open(path) as lines:
            return next((int(line.split()[1]) for line in lines if line.startswith(name)), 0)
    return field(f"/proc/{pid}/status", "VmHWM:"), field(f"/proc/{pid}/smaps_rollup", "Private_Dirty:")


def ssh_agent_table():
    directory = tempfile.mkdtemp(prefix="kc-bench-agent-")
    agents = []
    try:
        environment = dict(os.environ, KEYCHAIN_BACKEND="vault", KEYCHAIN_VAULT=os.path.join(directory, "v.age"),
                           KEYCHAIN_PASSPHRASE="bench", KEYCHAIN_VAULT_WORK_FACTOR="10")
        keys = {}
        for name, arguments in {"ed25519": ["-t", "ed25519"], "RSA-3072": ["-t", "rsa", "-b", "3072"]}.items():
            path = os.path.join(directory, name)
            subprocess.run(["ssh-keygen", "-q", "-N", "", "-C", name, "-f", path] + arguments, check=True)
            with open(path, "rb") as key:
                subprocess.run([KC, "-s", "bench", "set", name], stdin=key, env=environment, check=True)
            keys[name] = path
        ours, theirs = os.path.join(directory, "ours.sock"), os.path.join(directory, "openssh.sock")
        agents.append(start_agent([KC, "-s", "bench", "ssh-agent", "--from", "bench", "-D", "-a", ours], ours, environment))
        agents.append(start_agent(["ssh-agent", "-D", "-a", theirs], theirs))
        for path in keys.values():
            subprocess.run(["ssh-add", "-q", path], env=dict(os.environ, SSH_AUTH_SOCK=theirs), check=True,
                           stderr=subprocess.DEVNULL)
        row = []
        for name, path in keys.items():
            for agent, socket in (("keychain-cli ssh-agent", ours), ("OpenSSH ssh-agent", theirs)):
                argv = ["env", f"SSH_AUTH_SOCK={socket}", "ssh-keygen", "-Y", "sign", "-f", path + ".pub", "-n", "file"]
                row.append((f"{name}, {agent}", argv, MESSAGE, 0))
        result = measure(row)
        memory = {"keychain-cli ssh-agent": memory_kib(agents[0].pid), "OpenSSH ssh-agent": memory_kib(agents[1].pid)}
    finally:
        for agent in agents:
            agent.send_signal(signal.SIGTERM)
            agent.wait()
        shutil.rmtree(directory, ignore_errors=True)
    ms = {name: statistics.median(values) * 1000 for name, values in result.items()}
    table = ["\n## ssh-agent: `ssh-keygen -Y sign` through the agent\n",
             "| key | keychain-cli ssh-agent | OpenSSH ssh-agent | ratio |", "|---|---|---|---|"]
    for name in ("ed25519", "RSA-3072"):
        a, b = ms[f"{name}, keychain-cli ssh-agent"], ms[f"{name}, OpenSSH ssh-agent"]
        table.append(f"| {name} | {a:.2f} ms | {b:.2f} ms | **{a / b:.2f}×** |")
    (mine, mine_private), (openssh, openssh_private) = memory["keychain-cli ssh-agent"], memory["OpenSSH ssh-agent"]
    table += [f"| peak memory (VmHWM) | {mine / 1024:.1f} MiB | {openssh / 1024:.1f} MiB | **{mine / openssh:.2f}×** |",
              f"| private dirty memory | {mine_private / 1024:.1f} MiB | {openssh_private / 1024:.1f} MiB | "
              f"**{mine_private / openssh_private:.2f}×** |",
              "", f"How: both agents in the foreground holding the same two keys (ours read from a vault at its "
              f"start, OpenSSH's added by ssh-add); each run is a new `ssh-keygen -Y sign` of a 210-byte file "
              f"through `env SSH_AUTH_SOCK=…`. Medians of {RUNS} interleaved runs; peak memory of each agent once "
              f"every run was served (the resident set counts the pages of code each maps: Swift's runtime and "
              f"keychain-cli's own, kept in by its locked memory; the private dirty memory is what each wrote). "
              f"Targets: ≤ 1.0× OpenSSH's time; memory ≤ 1.5× OpenSSH's."]
    return "\n".join(table)


if __name__ == "__main__":
    print(ssh_agent_table())
