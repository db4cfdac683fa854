"""A Secret Service that answers from a script: the real-bus twin of the tests' FakeBus
(Tests/KeychainCoreTests/FakeBus.swift), playing the same scenario (BusScenario.json).

    /usr/bin/python3 scripted_service.py BUS_ADDRESS SCENARIO.json [NAME]

Owns NAME (org.freedesktop.secrets) on the bus at BUS_ADDRESS, prints "ready" once it does and hears
what it must, then answers each method call with the next answer scripted for it: values (with
their signature), a D-Bus error, a descriptor (a pipe's read end), or none at all, each optionally
behind a signal it broadcasts first. It logs every call it gets, keychain-cli's
SecretChanged signal, and (eavesdropping) every Peer.Ping sent to the bus, in the order the bus
delivered them. The method Log of org.keychain_cli.Test.Scripted answers that log as JSON once
every other client has left the bus: the bus delivers all a client sent before it says the client
has gone, so the log is then complete, whichever connection asks and whenever.
Ends when the bus goes, or on SIGTERM.
"""

import json
import os
import sys

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import MatchRule, message_bus
from jeepney.io.blocking import open_dbus_connection

UNSCRIPTED = "org.keychain_cli.Test.Unscripted"
LOG_INTERFACE = "org.keychain_cli.Test.Scripted"
WATCH_INTERFACE = "io.github.keychain_cli.Watch"


def end_of_type(signature, start):
    """The index just past the single complete type that begins at `start`."""
    code = signature[start]
    if code == "a":
        return end_of_type(signature, start + 1)
    if code in "({":
        close, index = ")" if code == "(" else "}", start + 1
        while signature[index] != close:
            index = end_of_type(signature, index)
        return index + 1
    return start + 1


def split(signature):
    """The single complete types of `signature`, in order."""
    types, index = [], 0
    while index < len(signature):
        end = end_of_type(signature, index)
        types.append(signature[index:end])
        index = end
    return types


def value(signature, data):
    """The jeepney value of type `signature` that BusValue.json wrote as `data`."""
    if signature == "ay":
        return bytes(data)
    if signature.startswith("a{"):
        key, item = split(signature[2:-1])
        return {value(key, k): value(item, v) for k, v in data}
    if signature[0] == "a":
        return [value(signature[1:], element) for element in data]
    if signature[0] == "(":
        return tuple(value(t, field) for t, field in zip(split(signature[1:-1]), data))
    if signature == "v":
        return (data[0], value(data[0], data[1]))
    return data


def event(kind, message):
    fields = message.header.fields
    types = split(fields.get(HeaderFields.signature, ""))
    return {
        "kind": kind, "path": fields.get(HeaderFields.path, ""),
        "interface": fields.get(HeaderFields.interface, ""),
        "member": fields.get(HeaderFields.member, ""),
        "strings": [argument for t, argument in zip(types, message.body) if t == "s"],
    }


def answer(connection, message, methods):
    """Sends the next answer scripted for the method call `message`, if it is not one never given."""
    fields = message.header.fields
    interface, member, path = (
        fields.get(field) for field in (HeaderFields.interface, HeaderFields.member, HeaderFields.path))
    scripted = next((m for m in methods if m["interface"] == interface and m["member"] == member
                     and m["path"] in (None, path) and m["replies"]), None)
    if scripted is None:
        detail = f"no answer scripted for {interface}.{member} on {path}"
        connection.send(new_error(message, UNSCRIPTED, "s", (detail,)))
        return
    reply = scripted["replies"].pop(0)
    if "signal" in reply:  # broadcast just before the answer, so that it reaches the caller first
        signal = reply["signal"]
        arguments = tuple(value(t, v) for t, v in zip(split(signal["signature"]), signal["values"]))
        address = DBusAddress(signal["path"], interface=signal["interface"])
        connection.send(new_signal(address, signal["member"], signal["signature"] or None, arguments))
    if "never" in reply:
        return
    if "descriptor" in reply:  # the read end of a pipe holding the text
        reader, writer = os.pipe()
        os.write(writer, reply["descriptor"].encode())
        os.close(writer)
        connection.send(new_method_return(message, "h", (reader,)))
        os.close(reader)
        return
    if "error" in reply:
        body = ("s", (reply["message"],)) if reply["message"] else (None, ())
        connection.send(new_error(message, reply["error"], *body))
        return
    values = tuple(value(t, v) for t, v in zip(split(reply["signature"]), reply["values"]))
    connection.send(new_method_return(message, reply["signature"], values))


def main():
    address, scenario_path = sys.argv[1:3]
    name = sys.argv[3] if len(sys.argv) > 3 else "org.freedesktop.secrets"
    with open(scenario_path) as f:
        methods = json.load(f)
    connection = open_dbus_connection(bus=address, enable_fds=True)
    owned = connection.send_and_get_reply(message_bus.RequestName(name, 4))  # DO_NOT_QUEUE
    if owned.body != (1,):  # PRIMARY_OWNER
        sys.exit(f"could not own {name}: {owned.body}")
    for rule in (MatchRule(type="signal", interface=WATCH_INTERFACE),
                 MatchRule(type="method_call", interface="org.freedesktop.DBus.Peer", member="Ping",
                           eavesdrop=True),
                 MatchRule(type="signal", sender="org.freedesktop.DBus", member="NameOwnerChanged")):
        connection.send_and_get_reply(message_bus.AddMatch(rule))
    ours = (name, connection.unique_name)
    # The log, the other clients on the bus now, and the Log calls waiting for them to leave.
    log, clients, waiting = [], set(), []
    print("ready", flush=True)
    while True:
        message = connection.receive()
        fields, kind = message.header.fields, message.header.message_type
        if kind == MessageType.signal and fields.get(HeaderFields.interface) == WATCH_INTERFACE:
            log.append(event("signal", message))
        elif kind == MessageType.signal and fields.get(HeaderFields.member) == "NameOwnerChanged" \
                and fields.get(HeaderFields.sender) == "org.freedesktop.DBus":
            changed, old, new = message.body
            if changed.startswith(":") and not old:
                clients.add(changed)
            elif changed.startswith(":") and not new:
                clients.discard(changed)
        elif kind != MessageType.method_call:
            continue
        elif fields.get(HeaderFields.destination) not in ours:  # an eavesdropped Ping, for the bus
            log.append(event("call", message))
        elif fields.get(HeaderFields.interface) == LOG_INTERFACE and fields.get(HeaderFields.member) == "Log":
            waiting.append(message)
        else:
            log.append(event("call", message))
            answer(connection, message, methods)
        # The bus delivers all a client sent before it says the client has gone: once every
        # client but the one asking has gone, the log holds everything they sent.
        for request in list(waiting):
            if clients <= {request.header.fields.get(HeaderFields.sender)}:
                connection.send(new_method_return(request, "s", (json.dumps(log),)))
                waiting.remove(request)


if __name__ == "__main__":
    try:
        main()
    except (ConnectionResetError, EOFError, KeyboardInterrupt):
        pass
