"""Asks a Secret Service provider what serve must answer as gnome-keyring does, one line per
question: the same script runs against gnome-keyring and serve, and the lines must agree.

    python3 answers.py [--no-pipelining]   (with DBUS_SESSION_BUS_ADDRESS the provider's bus)

--no-pipelining leaves out the Delete with calls queued behind it, which kills gnome-keyring 42.1
itself about one time in two (GLib 2.74 calls a freed table, as it did in serve): its answers to
it when it lives are in the test that runs this script.
"""

import sys

from ssclient import (I_COLLECTION, I_ITEM, I_PROPERTIES, I_SERVICE, LOGIN, SERVICE, SESSION_COLLECTION, Client)

client = Client()
call, error = client.call, client.error
print("plain session, string input:", error(SERVICE, I_SERVICE, "OpenSession", "sv", ("plain", ("s", "x"))))
print("plain session, bytes input:", error(SERVICE, I_SERVICE, "OpenSession", "sv", ("plain", ("ay", b"x"))))
for alias in ("default", "login", "session", "no-such-alias"):
    print(f"ReadAlias {alias}:", call(SERVICE, I_SERVICE, "ReadAlias", "s", (alias,))[0])
print("Collections:", sorted(client.get_property(SERVICE, I_SERVICE, "Collections")))

typed = client.create({"answers": "typed"}, "t", extra={"org.freedesktop.Secret.Item.Type": ("s", "org.example.T")})
print("Type given, no xdg:schema:", client.get_property(typed, I_ITEM, "Type"),
      client.get_property(typed, I_ITEM, "Attributes").get("xdg:schema"))
print("a property of the wrong type:",
      error(typed, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Label", ("u", 3))))

# An item in the session collection: found by a search of the service, never in another collection.
kept = client.create({"answers": "session"}, "in memory", collection=SESSION_COLLECTION)
print("session item:", kept.startswith(SESSION_COLLECTION + "/"),
      client.search({"answers": "session"}) == [kept], client.secret(kept),
      call(LOGIN, I_COLLECTION, "SearchItems", "a{ss}", ({"answers": "session"},))[0])

# The aliases' own paths, as libsecret makes them of an alias (secret-tool store --collection=NAME).
for alias in ("session", "login", "default"):
    made = client.create({"answers": "alias-" + alias}, alias, collection=SERVICE + "/aliases/" + alias)
    print(f"CreateItem on aliases/{alias}:", made.rsplit("/", 1)[0])
    call(made, I_ITEM, "Delete")

# An item's Type, a property CreateItem does not know.
print("set Type:", error(typed, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Type", ("s", "org.example.U"))),
      client.get_property(typed, I_ITEM, "Attributes").get("xdg:schema"))
print("an unknown property:", error(LOGIN, I_COLLECTION, "CreateItem", "a{sv}(oayays)b",
                                    ({"foo.bar": ("s", "x")}, (client.session, b"", b"s", "text/plain"), False)))

if "--no-pipelining" in sys.argv:
    for item in (typed, kept):
        call(item, I_ITEM, "Delete")
    sys.exit(0)

# Delete, then two Properties.Set and the other calls on it, sent without waiting.
gone = client.create({"answers": "deleted"}, "d")
serials = [
    client.send(gone, I_ITEM, "Delete"),
    client.send(gone, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Label", ("s", "x"))),
    client.send(gone, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Attributes", ("a{ss}", {"x": "y"}))),
    client.send(gone, I_PROPERTIES, "Get", "ss", (I_ITEM, "Label")),
    client.send(gone, I_PROPERTIES, "GetAll", "s", (I_ITEM,)),
    client.send(gone, I_ITEM, "GetSecret", "o", (client.session,)),
    client.send(gone, I_ITEM, "Delete"),
]
answers = client.replies(len(serials))
print("pipelined after Delete, in order:", [serial for serial, _ in answers] == serials)
print("pipelined after Delete, answers:", [name for _, name in answers])
print("an item that never existed:", error(LOGIN + "/987654", I_ITEM, "GetSecret", "o", (client.session,)))
for item in (typed, kept):
    call(item, I_ITEM, "Delete")
