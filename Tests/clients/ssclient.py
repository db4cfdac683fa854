"""A small Secret Service client for keychain-cli's serve tests, on jeepney (python3-jeepney,
SecretStorage's own D-Bus library): calls that wait for their reply, and calls sent without
waiting, whose replies are read later (pipelined, as a hostile or busy client sends them)."""

import os
import subprocess

from jeepney import DBusAddress, HeaderFields, MatchRule, MessageType, message_bus, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

BUS_NAME = "org.freedesktop.secrets"
SERVICE = "/org/freedesktop/secrets"
LOGIN = SERVICE + "/collection/login"
SESSION_COLLECTION = SERVICE + "/collection/session"
DEFAULT_ALIAS = SERVICE + "/aliases/default"
I_SERVICE = "org.freedesktop.Secret.Service"
I_COLLECTION = "org.freedesktop.Secret.Collection"
I_ITEM = "org.freedesktop.Secret.Item"
I_SESSION = "org.freedesktop.Secret.Session"
I_PROPERTIES = "org.freedesktop.DBus.Properties"
I_OBJECTS = "org.freedesktop.DBus.ObjectManager"


def message(path, interface, method, signature=None, body=()):
    return new_method_call(DBusAddress(path, bus_name=BUS_NAME, interface=interface), method, signature, body)


class Client:
    """One connection to the bus, with a plain session opened."""

    def __init__(self):
        self.connection = open_dbus_connection("SESSION")
        self.session = self.call(SERVICE, I_SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]

    def call(self, *arguments, timeout=30):
        """The reply's body; raises DBusErrorResponse for an error reply."""
        return unwrap_msg(self.connection.send_and_get_reply(message(*arguments), timeout=timeout))

    def error(self, *arguments, timeout=30):
        """The error's name, or None when the call succeeded."""
        try:
            self.call(*arguments, timeout=timeout)
            return None
        except DBusErrorResponse as error:
            return error.name

    def send(self, *arguments):
        """Sends a call without waiting; its serial."""
        serial = next(self.connection.outgoing_serial)
        self.connection.send(message(*arguments), serial=serial)
        return serial

    def replies(self, count, timeout=60):
        """The next `count` replies, in the order they came: (serial replied to, error name or None)."""
        answers = []
        while len(answers) < count:
            reply = self.connection.receive(timeout=timeout)
            if reply.header.message_type not in (MessageType.method_return, MessageType.error):
                continue
            error = reply.header.fields.get(HeaderFields.error_name)
            answers.append((reply.header.fields[HeaderFields.reply_serial], error))
        return answers

    def listen(self, member):
        """Keeps the signals named `member` that serve sends from now on, for announced()."""
        # (The messages name serve by its unique name: the bus, not this filter, knows it is BUS_NAME.)
        handle = self.connection.filter(MatchRule(type="signal", member=member), bufsize=10000)
        rule = MatchRule(type="signal", sender=BUS_NAME, member=member)
        unwrap_msg(self.connection.send_and_get_reply(message_bus.AddMatch(rule)))
        return handle.queue

    def announced(self, queue, path, timeout=30):
        """Waits for a signal kept in `queue` (see listen()) about `path` (its first argument)."""
        while self.connection.recv_until_filtered(queue, timeout=timeout).body[0] != path:
            pass

    def create(self, attributes, secret, label="", replace=False, collection=LOGIN, extra=None):
        properties = {
            "org.freedesktop.Secret.Item.Attributes": ("a{ss}", attributes),
            "org.freedesktop.Secret.Item.Label": ("s", label),
        }
        properties.update(extra or {})
        secret = secret if isinstance(secret, bytes) else secret.encode()
        return self.call(
            collection, I_COLLECTION, "CreateItem", "a{sv}(oayays)b",
            (properties, (self.session, b"", secret, "text/plain"), replace))[0]

    def set_property(self, path, interface, name, signature, value):
        return self.call(path, I_PROPERTIES, "Set", "ssv", (interface, name, (signature, value)))

    def get_property(self, path, interface, name):
        return self.call(path, I_PROPERTIES, "Get", "ss", (interface, name))[0][1]

    def secret(self, item):
        return bytes(self.call(item, I_ITEM, "GetSecret", "o", (self.session,))[0][2])

    def search(self, attributes):
        unlocked, locked = self.call(SERVICE, I_SERVICE, "SearchItems", "a{ss}", (attributes,))
        return unlocked + locked


def backend_environment():
    """The environment of a keychain-cli that opens serve's backend itself: serve passes on
    neither the vault's passphrase nor OpenBao's token, so the test gives them as $PW and $TOKEN."""
    environment = dict(os.environ)
    environment.pop("DBUS_SESSION_BUS_ADDRESS", None)
    if "PW" in environment:
        environment["KEYCHAIN_PASSPHRASE"] = environment["PW"]
    if "TOKEN" in environment:
        environment["BAO_TOKEN"] = environment["TOKEN"]
    return environment


def cli(*arguments, stdin=None):
    """keychain-cli (first in PATH) on serve's backend; its exit status."""
    return subprocess.run(
        ["keychain-cli", *arguments], input=stdin, env=backend_environment(), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode


def cli_output(*arguments):
    return subprocess.run(["keychain-cli", *arguments], env=backend_environment(), capture_output=True)
