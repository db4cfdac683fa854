"""A TCP proxy to an OpenBao server that can stall: while the file STALL exists, whatever a client
sends is held and never forwarded, and that connection stays stalled for good (as a request to a
server that stopped answering); connections with nothing to send meanwhile, and new ones once
STALL is gone, are forwarded as usual. Each connection that stalls appends "held" to STALL.held,
and "given up" when its client then hangs up: a test that made STALL.held a FIFO reads them as
they happen.

    python3 stall_proxy.py PORT_FILE UPSTREAM_PORT STALL   (writes the port it listens on to PORT_FILE)
"""

import os
import socket
import sys
import threading

port_file, upstream, stall = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# Runs on in the background: it keeps no descriptor of whoever started it (who may wait for them).
os.closerange(3, 65536)


def note(what):
    with open(stall + ".held", "a") as file:
        file.write(what + "\n")


def pipe(source, target, stalls):
    stalled = False
    try:
        while True:
            data = source.recv(65536)
            if not data:
                if stalled:
                    note("given up")
                break
            if stalls and not stalled and os.path.exists(stall):
                stalled = True
                note("held")
            if not stalled:
                target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
with open(port_file + ".tmp", "w") as file:
    file.write(str(listener.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    client, _ = listener.accept()
    server = socket.create_connection(("127.0.0.1", upstream))
    threading.Thread(target=pipe, args=(client, server, True), daemon=True).start()
    threading.Thread(target=pipe, args=(server, client, False), daemon=True).start()
