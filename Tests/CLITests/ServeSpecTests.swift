import Foundation
import TestSupport
import Testing

/// serve as the specification and gnome-keyring answer: the session collection, one signal per
/// change, D-Bus's limits, what a failed call leaves, names OpenBao cannot hold, and the end of a
/// serve that is killed. Each case is a break an outside attack found, held as a fact.
@Suite("serve: answers, limits and failures as gnome-keyring has them")
struct ServeSpecTests {
    /// The same questions to gnome-keyring and to serve get the same answers (Tests/clients/
    /// answers.py): a plain session's input, the aliases (`session` included, and their own
    /// paths, which secret-tool's --collection uses) and collections, an item's Type, unknown
    /// CreateItem properties, the session collection. An item deleted while a Properties.Set and
    /// other calls to it wait in the queue (which killed serve, and kills gnome-keyring 42.1
    /// about one time in two) is answered in order, with what gnome-keyring answers when it lives.
    @Test func answersAsGnomeKeyringDoes() throws {
        let keyring = try KeyringSession.start()
        defer { keyring.stop() }
        var environment = keyring.environment
        environment["PYTHONPATH"] = clientScripts
        let theirs = try runProcess(
            "/usr/bin/python3", ["\(clientScripts)/answers.py", "--no-pipelining"], environment: environment,
            timeout: 60)
        #expect(theirs.status == 0, "\(theirs.stderr)")
        // gnome-keyring 42.1 honours a Type given to CreateItem in some runs and not in others (2
        // of 3 runs here answered the generic schema): serve always honours it.
        let typed = "Type given, no xdg:schema: org.example.T org.example.T\n"
        let generic = "Type given, no xdg:schema: org.freedesktop.Secret.Generic org.freedesktop.Secret.Generic\n"
        #expect(theirs.stdoutText.contains(typed) || theirs.stdoutText.contains(generic))
        let theirAnswers = theirs.stdoutText.replacing(generic, with: typed)
        try CLIBackend.withVault { _ in
            let ours = try served("python3 \"$PYTHONPATH/answers.py\"")
            #expect(ours.status == 0, "\(ours.stderr)")
            let pipelined = """
                pipelined after Delete, in order: True
                pipelined after Delete, answers: [None, 'org.freedesktop.Secret.Error.NoSuchObject', \
                'org.freedesktop.Secret.Error.NoSuchObject', 'org.freedesktop.DBus.Error.UnknownMethod', \
                'org.freedesktop.DBus.Error.UnknownMethod', 'org.freedesktop.DBus.Error.UnknownMethod', \
                'org.freedesktop.DBus.Error.UnknownMethod']
                an item that never existed: org.freedesktop.DBus.Error.UnknownMethod

                """
            #expect(ours.stdoutText == theirAnswers + pipelined)
        }
        for line in [
            "plain session, bytes input: org.freedesktop.DBus.Error.InvalidArgs",
            "ReadAlias session: /org/freedesktop/secrets/collection/session",
            "CreateItem on aliases/session: /org/freedesktop/secrets/collection/session",
            "set Type: None org.example.U",
            "an unknown property: org.freedesktop.DBus.Error.InvalidArgs",
        ] {
            #expect(theirs.stdoutText.contains(line + "\n"), "gnome-keyring no longer answers \(line)")
        }
    }

    /// A GetSecrets reply whose secrets are just under 64 MiB together, but over D-Bus's 64 MiB
    /// array limit with their paths, is refused (Failed) instead of getting serve's connection
    /// dropped by the bus; `secret-tool search --all` does the same; a label just under 64 MiB
    /// is refused (InvalidArgs) at CreateItem and at Properties.Set, because serve could not
    /// announce it. serve answers on after each, and keychain-cli's export reads every item.
    @Test func repliesAndLabelsPastTheBusLimitsAreRefusedAndServeLivesOn() throws {
        try CLIBackend.withVault { _ in
            let secret = String(repeating: "x", count: (1 << 20) - 16)
            let items = (0..<64).map { #"{"service":"big","key":"k\#($0)","encoding":"utf8","secret":"\#(secret)"}"# }
            let document = #"{"format":"keychain-cli-export","version":1,"items":[\#(items.joined(separator: ","))]}"#
            #expect(try cli(["import"], stdin: Data(document.utf8)).status == 0)
            let script = """
                from ssclient import *
                c = Client()
                items = c.search({"service": "big"})
                print(len(items), c.error(SERVICE, I_SERVICE, "GetSecrets", "aoo", (items, c.session)))
                huge = "l" * ((1 << 26) - 100)  # the message of the client keeps within the limit
                print(c.error(LOGIN, I_COLLECTION, "CreateItem", "a{sv}(oayays)b",
                    ({"org.freedesktop.Secret.Item.Label": ("s", huge)}, (c.session, b"", b"s", "text/plain"), False)))
                print(c.error(items[0], I_PROPERTIES, "Set", "ssv", (I_ITEM, "Label", ("s", huge))))
                print(len(c.secret(items[0])), len(c.search({})))
                """
            let result = try served(
                """
                python3 -c '\(script)' || exit 9
                secret-tool search --all service big > /dev/null 2>&1
                KEYCHAIN_BACKEND=secret-service keychain-cli -s big export --yes | grep -c '"key" : "k'
                """, timeout: 180)
            #expect(
                result.stdoutText
                    == "64 org.freedesktop.DBus.Error.Failed\norg.freedesktop.DBus.Error.InvalidArgs\n"
                    + "org.freedesktop.DBus.Error.InvalidArgs\n\((1 << 20) - 16) 64\n64\n",
                "\(result.stderr.suffix(2000))")
            #expect(result.status == 0)
            #expect(try cli(["list", "--all-services"]).stdoutText.split(separator: "\n").count == 64)
        }
    }

    /// Every change serve makes, and every change another process makes, is announced once, from
    /// the collection's path (as gnome-keyring does): before, serve's own writes came back through
    /// the backend's watcher and each went out on the alias path as well.
    @Test(arguments: [ServedBackend.vault, .openbao])
    func eachChangeIsAnnouncedOnce(backend: ServedBackend) throws {
        try backend.run { storage in
            let script = """
                from ssclient import *
                c = Client()
                item = c.create({"service": "sig", "username": "a"}, "1")
                c.call(item, I_ITEM, "SetSecret", "(oayays)", ((c.session, b"", b"2", "text/plain"),))
                c.set_property(item, I_ITEM, "Label", "s", "relabelled")
                c.set_property(item, I_ITEM, "Attributes", "a{ss}", {"service": "sig", "username": "b"})
                c.call(item, I_ITEM, "Delete")
                """
            // Each change by another process is made once the one before was announced; the last,
            // "end" (counted too), is announced only after any echo of the ones before it.
            let result = try served(
                """
                monitor --profile "type=signal,sender=org.freedesktop.secrets"
                python3 -c '\(script)' || exit 9
                upto ItemDeleted || exit 7
                kc() { KEYCHAIN_PASSPHRASE="$PW" BAO_TOKEN="$TOKEN" keychain-cli -s sig "$@"; }
                printf 3 | kc set c && upto ItemCreated || exit 8
                printf 4 | kc set c && upto ItemChanged || exit 8
                kc delete c < /dev/null && upto ItemDeleted || exit 8
                printf e | kc set end && upto ItemCreated || exit 8
                kill $monitor
                awk '$8 ~ /^Item/ { print $6, $8 }' monitor.log | sort | uniq -c
                """, extra: storage.secretsForCommands, timeout: 120)
            let login = "/org/freedesktop/secrets/collection/login"
            #expect(
                result.stdoutText.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                    == ["4 \(login) ItemChanged", "3 \(login) ItemCreated", "2 \(login) ItemDeleted"],
                "\(result.stdoutText) \(result.stderr)")
        }
    }

    /// The collection's label, set by a client (SecretStorage's own tests rename it), is kept in
    /// the backend: a serve started later shows it. Before, it was forgotten at the next start.
    @Test(arguments: ServedBackend.allCases)
    func theCollectionsLabelOutlivesServe(backend: ServedBackend) throws {
        try backend.run { _ in
            let label =
                "python3 -c 'import secretstorage; c = secretstorage.get_default_collection(secretstorage.dbus_init())"
            #expect(try served("\(label); c.set_label(\"Renamed\")'").status == 0)
            let later = try served("\(label); print(c.get_label())'")
            #expect(later.stdoutText == "Renamed\n", "\(later.stderr)")
            // Not an item: keychain-cli lists nothing.
            #expect(try cli(["list", "--all-services"]).stdoutText == "")
        }
    }

    /// The session collection's items are never written to the backend, and are gone when serve
    /// stops; the alias `session` and the Collections property still name the collection.
    @Test func theSessionCollectionIsKeptInMemoryOnly() throws {
        try CLIBackend.withVault { _ in
            let first = try served(
                """
                python3 -c 'from ssclient import *
                c = Client()
                item = c.create({"service": "sess", "username": "u"}, "in memory", collection=SESSION_COLLECTION)
                print(c.secret(item).decode(), cli("-s", "sess", "get", "u"))' || exit 9
                secret-tool lookup service sess username u
                """, extra: ["PW": CLIBackend.passphrase])
            #expect(first.stdoutText == "in memory 1\nin memory", "\(first.stderr)")
            let later = try served(
                """
                python3 -c 'from ssclient import *
                c = Client()
                print(c.search({"service": "sess"}), c.call(SERVICE, I_SERVICE, "ReadAlias", "s", ("session",))[0])'
                """)
            #expect(later.stdoutText == "[] /org/freedesktop/secrets/collection/session\n", "\(later.stderr)")
            #expect(try cli(["list", "--all-services"]).stdoutText == "")
        }
    }

    /// A service name with a character OpenBao refuses in a path (a tab, a line end, U+2028) is
    /// kept under secret-service with a random key, as documented, instead of failing with "check
    /// that 'secret' is a KV version 2 mount"; keychain-cli itself says the name is invalid (64).
    @Test func namesOpenBaoCannotHoldAreKeptUnderSecretService() throws {
        try ServedBackend.openbao.run { _ in
            let result = try served(
                """
                python3 -c 'from ssclient import *
                c = Client()
                for service, secret in (("a\\tb", "one"), ("x\\u2028y", "two")):
                    c.create({"service": service, "username": "u"}, secret)
                    item, = c.search({"service": service, "username": "u"})
                    print(c.secret(item).decode())'
                """)
            #expect(result.stdoutText == "one\ntwo\n", "\(result.stderr)")
            let listed = try cli(["list", "--all-services"]).stdoutText.split(separator: "\n")
            #expect(listed.count == 2 && listed.allSatisfy { $0.hasPrefix("secret-service\t") }, "\(listed)")
            let direct = try cli(["-s", "a\tb", "set", "k"], input: "v")
            #expect(direct.status == 64)
            #expect(direct.stderr.contains("OpenBao refuses in a path"), "\(direct.stderr)")
        }
    }

    /// An attribute change that moves an item to another OpenBao secret, when the token may not
    /// write the secret it leaves (a read-only policy), fails with nothing changed: the copy it
    /// had written is removed, so no later serve shows the item twice. A failed Properties.Set
    /// answers org.freedesktop.DBus.Error.Failed, as every other failure (was an unmapped GError).
    @Test func aFailedMoveOnOpenBaoChangesNothing() throws {
        try CLIBackend.withOpenBaoMount { server, mount in
            #expect(try cli(["-s", "ro", "set", "u"], input: "kept").status == 0)
            let policy = """
                path "\(mount)/data/*" { capabilities = ["read"] }
                path "\(mount)/data/dest" { capabilities = ["read", "create", "update", "patch"] }
                path "\(mount)/metadata/*" { capabilities = ["read", "list"] }
                """
            #expect(try server.putPolicy("\(mount)-mover", policy) == 204)
            let created = try server.api("POST", "auth/token/create", json: #"{"policies":["\#(mount)-mover"]}"#)
            let token = try #require((jsonObject(created.body)["auth"] as? [String: Any])?["client_token"] as? String)
            let script = """
                from ssclient import *
                c = Client()
                item, = c.search({"service": "ro", "username": "u"})
                print(c.error(item, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Attributes", ("a{ss}", {"service": "dest", "username": "u"}))))
                print(c.error(item, I_PROPERTIES, "Set", "ssv", (I_ITEM, "Label", ("s", "relabelled"))))
                print(c.get_property(item, I_ITEM, "Attributes")["service"], c.secret(item).decode())
                """
            let result = try served("python3 -c '\(script)'", extra: ["BAO_TOKEN": token])
            #expect(
                result.stdoutText
                    == "org.freedesktop.DBus.Error.Failed\norg.freedesktop.DBus.Error.Failed\nro kept\n",
                "\(result.stderr)")
            #expect(try cli(["list", "--all-services"]).stdoutText == "ro\tu\n")
            let destination = try server.api("GET", "\(mount)/data/dest")
            #expect(!destination.body.contains("\"u\""), "\(destination.body)")
        }
    }
}
