"""Probes of an ssh-agent at $SSH_AUTH_SOCK for the ssh-agent tests (written from
draft-miller-ssh-agent): hostile clients, and a search of a process's memory.

    agent_probe.py hostile          prints one line per probe, then "still answers N keys"
    agent_probe.py pipelined        20,000 requests in one write: how many answers came back; then
                                    20,000 more on a connection that never reads its answers
    agent_probe.py memory PID HEX   prints "found" or "absent": whether the bytes HEX are in
                                    any readable mapping of process PID (root only)
"""
import os
import socket
import struct
import sys


def connect():
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    client.connect(os.environ["SSH_AUTH_SOCK"])
    return client


def receive(client):
    """One framed answer's body, or None when the agent closed the connection."""
    try:
        header = b""
        while len(header) < 4:
            part = client.recv(4 - len(header))
            if not part:
                return None
            header += part
        (length,) = struct.unpack(">I", header)
        body = b""
        while len(body) < length:
            part = client.recv(length - len(body))
            if not part:
                return None
            body += part
        return body
    except (ConnectionResetError, socket.timeout):
        return None


def ask(client, body):
    client.sendall(struct.pack(">I", len(body)) + body)
    return receive(client)


def count_keys(client):
    answer = ask(client, b"\x0b")
    if answer is None or answer[0] != 12:
        return None
    return struct.unpack(">I", answer[1:5])[0]


def hostile():
    # 100 clients at once, each holding its connection open with half a request.
    held = []
    for _ in range(100):
        client = connect()
        client.sendall(struct.pack(">I", 50) + b"\x0b")
        held.append(client)
    # A truncated request whose client goes away.
    client = connect()
    client.sendall(struct.pack(">I", 100) + b"\x0d" * 10)
    client.close()
    # Oversized: a length over 256 KiB closes the connection.
    client = connect()
    client.sendall(struct.pack(">I", 300 * 1024) + b"\x0b")
    print("oversized closed" if receive(client) is None else "oversized answered")
    # Malformed: a sign request whose key blob is cut short, an unknown type, an empty body.
    client = connect()
    print("malformed", ask(client, b"\x0d\x00\x00\x00\xff\x00").hex())
    print("unknown", ask(client, b"\xc8").hex())
    print("empty", ask(client, b"").hex() if True else "")
    print("same connection lists", count_keys(client))
    for client in held:
        client.close()
    print("still answers", count_keys(connect()), "keys")


def memory(pid, needle):
    found = False
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1]:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    found = True
            except (OSError, ValueError, OverflowError):
                continue
    print("found" if found else "absent")


def pipelined():
    count = 20000
    client = connect()
    client.settimeout(30)
    client.sendall((struct.pack(">I", 1) + b"\x0b") * count)
    answers = 0
    while answers < count and receive(client) is not None:
        answers += 1
    print("answers", answers)
    # One that never reads: the agent stops reading it, and answers the others.
    silent = connect()
    silent.setblocking(False)
    try:
        silent.sendall((struct.pack(">I", 1) + b"\x0b") * count)
    except BlockingIOError:
        pass
    print("still answers", count_keys(connect()), "keys")
    silent.close()


if __name__ == "__main__":
    if sys.argv[1] == "hostile":
        hostile()
    elif sys.argv[1] == "pipelined":
        pipelined()
    else:
        memory(int(sys.argv[2]), bytes.fromhex(sys.argv[3]))
