import Foundation
import TestSupport
import Testing

/// Other projects' Secret Service clients against `keychain-cli serve`, on each backend it serves
/// from: what they store reads back through them and through keychain-cli's own backends.
@Suite("serve: real clients on the vault, a team vault and OpenBao")
struct ServeClientTests {
    /// secret-tool (libsecret, encrypted session) stores, looks up, searches and clears; an item
    /// with service and username attributes is the backend's own item, read and written by
    /// keychain-cli outside serve, in both directions.
    @Test(arguments: ServedBackend.allCases)
    func secretToolItemsAreTheBackendsOwnItems(backend: ServedBackend) throws {
        try backend.run { _ in
            #expect(try cli(["-s", "outside", "set", "k"], input: "from-cli").status == 0)
            let result = try served(
                """
                printf 's3cret' | secret-tool store --label='Deploy key' service S username u extra x || exit 10
                secret-tool lookup service S username u; echo
                secret-tool lookup service outside username k; echo
                secret-tool search --all service S 2>&1
                printf 'other' | secret-tool store --label=Other kind note || exit 11
                secret-tool lookup kind note; echo
                """)
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdoutText.split(separator: "\n").map(String.init)
            #expect(Array(lines.prefix(2)) == ["s3cret", "from-cli"])
            #expect(lines.contains("label = Deploy key") && lines.contains("attribute.extra = x"))
            #expect(lines.last == "other")
            // Outside serve, on the backend itself.
            #expect(try cli(["-s", "S", "get", "u"]).stdoutText == "s3cret")
            let listed = try cli(["list", "--all-services"]).stdoutText
            #expect(listed.contains("S\tu\n") && listed.contains("secret-service\t"))
            // The label and application serve kept are what list --json shows.
            #expect(try cli(["-s", "S", "list", "--json"]).stdoutText.contains("\"label\" : \"Deploy key\""))

            let cleared = try served(
                "secret-tool clear service S username u && secret-tool lookup service S username u")
            #expect(cleared.status == 1)
            #expect(try cli(["-s", "S", "get", "u"]).status == 1)
        }
    }

    /// python keyring and SecretStorage (jeepney, its own encrypted session): set, get, delete;
    /// content type, label and attributes kept; a second item with the same attributes when not
    /// replacing; Lock gives no secret until Unlock.
    @Test(arguments: ServedBackend.allCases)
    func pythonKeyringAndSecretStorage(backend: ServedBackend) throws {
        try backend.run { _ in
            let script = """
                import keyring, secretstorage
                keyring.set_password("py", "alice", "pw1")
                print(keyring.get_password("py", "alice"))
                connection = secretstorage.dbus_init()
                collection = secretstorage.get_default_collection(connection)
                item = collection.create_item("Note", {"app": "t", "n": "1"}, b"bytes\\x00\\xff", content_type="application/octet-stream")
                print(item.get_secret() == b"bytes\\x00\\xff", item.get_secret_content_type(), item.get_label())
                again = collection.create_item("Note 2", {"app": "t", "n": "1"}, b"two", replace=False)
                print(len(list(collection.search_items({"app": "t"}))))
                item.set_label("Renamed"); item.set_attributes({"app": "t", "n": "3"})
                print(item.get_label(), sorted(item.get_attributes().items()))
                print(abs(item.get_created() - __import__("time").time()) < 60, item.get_modified() >= item.get_created())
                collection.lock()
                print(collection.is_locked(), item.is_locked())
                try:
                    item.get_secret(); print("read while locked")
                except secretstorage.exceptions.LockedException:
                    print("locked")
                collection.unlock()
                print(item.get_secret())
                again.delete()
                print(len(list(collection.search_items({"app": "t"}))))
                keyring.delete_password("py", "alice")
                print(keyring.get_password("py", "alice"))
                """
            let result = try served("python3 -c '\(script.replacingOccurrences(of: "'", with: "'\\''"))'")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stdoutText.split(separator: "\n").map(String.init) == [
                    "pw1", "True application/octet-stream Note", "2",
                    "Renamed [('app', 't'), ('n', '3')]", "True True", "True True", "locked", "b'bytes\\x00\\xff'",
                    "1", "None",
                ])
        }
    }

    /// git-credential-libsecret (git's contrib, built here) and docker-credential-secretservice.
    @Test(arguments: ServedBackend.allCases)
    func gitAndDockerCredentialHelpers(backend: ServedBackend) throws {
        try backend.run { _ in
            let result = try served(
                """
                printf 'protocol=https\\nhost=git.example\\nusername=al\\npassword=gp\\n\\n' | "$GCL" store >/dev/null
                printf 'protocol=https\\nhost=git.example\\n\\n' | "$GCL" get
                printf 'protocol=https\\nhost=git.example\\nusername=al\\npassword=gp\\n\\n' | "$GCL" erase >/dev/null
                printf 'protocol=https\\nhost=git.example\\n\\n' | "$GCL" get; echo "after erase: $?"
                printf '{"ServerURL":"https://reg.example","Username":"du","Secret":"ds"}' \\
                    | docker-credential-secretservice store
                echo https://reg.example | docker-credential-secretservice get
                docker-credential-secretservice list
                echo https://reg.example | docker-credential-secretservice erase
                docker-credential-secretservice list
                """)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stdoutText == """
                    username=al
                    password=gp
                    after erase: 0
                    {"ServerURL":"https://reg.example","Username":"du","Secret":"ds"}
                    {"https://reg.example":"du"}
                    {}

                    """)
        }
    }

    /// keychain-cli's own Secret Service backend (the default backend inside serve's bus).
    @Test(arguments: ServedBackend.allCases)
    func keychainCLIsSecretServiceBackend(backend: ServedBackend) throws {
        try backend.run { _ in
            let result = try served(
                """
                export KEYCHAIN_BACKEND=secret-service
                printf v1 | keychain-cli -s ci set tok || exit 10
                printf v2 | keychain-cli -s ci set tok2 || exit 11
                keychain-cli -s ci get tok; echo
                keychain-cli -s ci list
                keychain-cli -s ci export --yes | grep -c '"secret"'
                keychain-cli -s ci delete tok2 || exit 12
                keychain-cli -s ci reset --yes >/dev/null || exit 13
                keychain-cli -s ci list | wc -l
                keychain-cli doctor | grep -c 'owned by keychain-cli serve (pid'
                """)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText == "v1\ntok\ntok2\n2\n0\n1\n")
        }
    }

    /// D-Bus's ObjectManager on /org/freedesktop/secrets, read with jeepney: GetManagedObjects
    /// gives the collection, its alias and every item with its properties; InterfacesAdded and
    /// InterfacesRemoved announce an item secret-tool stores and clears. keychain-cli's listing of
    /// 70 items (one GetManagedObjects call, where gnome-keyring takes 280 Properties.Get) gives
    /// every key, label and date.
    @Test(arguments: ServedBackend.allCases)
    func objectManagerAndALargeListing(backend: ServedBackend) throws {
        try backend.run { _ in
            let items = (0..<70).map { #"{"service":"big","key":"k-\#($0)","encoding":"utf8","secret":"v\#($0)"}"# }
            let document = #"{"format":"keychain-cli-export","version":1,"items":[\#(items.joined(separator: ","))]}"#
            #expect(try cli(["import"], input: document).status == 0)
            let script = """
                import subprocess
                from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
                from jeepney.io.blocking import Proxy, open_dbus_connection
                bus = open_dbus_connection(bus="SESSION")
                manager = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                                      interface="org.freedesktop.DBus.ObjectManager")
                objects = bus.send_and_get_reply(new_method_call(manager, "GetManagedObjects")).body[0]
                ITEM = "org.freedesktop.Secret.Item"
                items = [i[ITEM] for i in objects.values() if ITEM in i]
                collection = objects["/org/freedesktop/secrets/collection/login"]["org.freedesktop.Secret.Collection"]
                print(len(items), len(collection["Items"][1]), sorted(collection),
                      "/org/freedesktop/secrets/aliases/default" in objects)
                seven = next(i for i in items if i["Attributes"][1].get("username") == "k-7")
                print(seven["Label"][1], seven["Locked"][1], sorted(seven))
                rule = MatchRule(type="signal", interface="org.freedesktop.DBus.ObjectManager",
                                 path="/org/freedesktop/secrets")
                Proxy(message_bus, bus).AddMatch(rule)
                def item_signal(queue, member):
                    while True:
                        signal = bus.recv_until_filtered(queue, timeout=20)
                        if signal.header.fields[3] == member and ITEM in signal.body[1]:
                            return signal.body[1]
                with bus.filter(rule) as queue:
                    subprocess.run("printf v | secret-tool store --label=New service om username new", shell=True, check=True)
                    added = item_signal(queue, "InterfacesAdded")[ITEM]
                    print("added", added["Label"][1], added["Attributes"][1]["username"])
                    subprocess.run("secret-tool clear service om username new", shell=True, check=True)
                    print("removed", item_signal(queue, "InterfacesRemoved"))
                """
            let result = try served(
                """
                python3 -c '\(script)' || exit 10
                KEYCHAIN_BACKEND=secret-service keychain-cli -s big list --json > listed.json || exit 11
                python3 -c 'import json; listed = json.load(open("listed.json")); print(len(listed), sorted(i["key"] for i in listed) == sorted(f"k-{n}" for n in range(70)))
                seven = next(i for i in listed if i["key"] == "k-7")
                print(seven["label"], seven["created"] <= seven["modified"])'
                """)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stdoutText.split(separator: "\n").map(String.init) == [
                    "70 70 ['Created', 'Items', 'Label', 'Locked', 'Modified'] True",
                    "big/k-7 (keychain-cli) False ['Attributes', 'Created', 'Label', 'Locked', 'Modified', 'Type']",
                    "added New new", "removed ['org.freedesktop.Secret.Item']", "70 True",
                    "big/k-7 (keychain-cli) True",
                ])
        }
    }

    /// SecretStorage's own test suite, its cases against a real provider as facts (its suite,
    /// run against serve as it is, passes 21 of 21 such cases): an empty item with no attributes;
    /// the collection's label set and restored; a second delete, an unknown item path and an
    /// unknown alias are each ItemNotFoundException; an item found again by search is equal.
    @Test func secretStoragesOwnCasesHoldAsFacts() throws {
        try CLIBackend.withVault { _ in
            let script = """
                import secretstorage
                from secretstorage.exceptions import ItemNotFoundException
                connection = secretstorage.dbus_init()
                collection = secretstorage.get_any_collection(connection)
                empty = collection.create_item("Test", {}, b"")
                print(empty.get_secret() == b"", empty.get_attributes() == {})
                empty.delete()
                old = collection.get_label(); collection.set_label("Hello!")
                print(collection.get_label()); collection.set_label(old); print(collection.get_label() == old)
                item = collection.create_item("MyItem", {"application": "secretstorage-test"}, b"pa$$word")
                print(next(collection.search_items({"application": "secretstorage-test"})) == item)
                item.delete()
                for attempt in (item.delete, lambda: secretstorage.Item(connection, "/not/existing/path"),
                                lambda: secretstorage.get_collection_by_alias(connection, "non-existing-alias")):
                    try:
                        attempt(); print("no exception")
                    except ItemNotFoundException:
                        print("ItemNotFoundException")
                """
            let result = try served("python3 -c '\(script)'")
            #expect(
                result.stdoutText == "True True\nHello!\nTrue\nTrue\n"
                    + String(repeating: "ItemNotFoundException\n", count: 3),
                "\(result.stderr)")
        }
    }
}
