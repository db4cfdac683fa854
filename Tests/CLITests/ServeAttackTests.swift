import Foundation
import TestSupport
import Testing

/// Breaks an outside attack found in `serve`, each kept as a test.
@Suite("serve: what an attack broke, fixed")
struct ServeAttackTests {
    /// An item `set` wrote, updated through serve by secret-tool and python keyring (replacing
    /// writes with other attributes): every reader sees the new secret, and the backend holds one
    /// item, not a stale one hidden behind a second.
    @Test(arguments: ServedBackend.allCases)
    func aReplacingWriteUpdatesTheBackendsItem(backend: ServedBackend) throws {
        try backend.run { _ in
            #expect(try cli(["-s", "S", "set", "U"], input: "old").status == 0)
            let result = try served(
                """
                printf new | secret-tool store --label=x service S username U || exit 9
                secret-tool lookup service S username U; echo
                python3 -c 'import keyring; keyring.set_password("S", "U", "newer"); print(keyring.get_password("S", "U"))'
                """)
            #expect(result.stdoutText == "new\nnewer\n", "\(result.stderr)")
            #expect(try cli(["-s", "S", "get", "U"]).stdoutText == "newer")
            #expect(try cli(["list", "--all-services"]).stdoutText == "S\tU\n")
        }
    }

    /// An item's attributes set to a service and username moves it to that backend item; a
    /// service OpenBao cannot make a path of (a URL, as twine's python keyring uses) is kept
    /// under secret-service instead of failing.
    @Test(arguments: ServedBackend.allCases)
    func itemsGoWhereTheirAttributesSayOrUnderSecretService(backend: ServedBackend) throws {
        try backend.run { _ in
            let script = """
                import keyring, secretstorage
                collection = secretstorage.get_default_collection(secretstorage.dbus_init())
                item = collection.create_item("note", {"kind": "x"}, b"moved")
                item.set_attributes({"service": "S", "username": "U"})
                keyring.set_password("https://upload.pypi.org/legacy/", "me", "pypi-token")
                print(keyring.get_password("https://upload.pypi.org/legacy/", "me"))
                """
            let result = try served("python3 -c '\(script)'")
            #expect(result.stdoutText == "pypi-token\n", "\(result.stderr)")
            #expect(try cli(["-s", "S", "get", "U"]).stdoutText == "moved")
            let listed = try cli(["list", "--all-services"]).stdoutText.split(separator: "\n")
            #expect(listed.count == 2 && listed.contains("S\tU"), "\(listed)")
            #expect(
                backend == .openbao
                    ? listed.contains { $0.hasPrefix("secret-service\t") }
                    : listed.contains("https://upload.pypi.org/legacy/\tme"), "\(listed)")
        }
    }

    /// Raw D-Bus calls (jeepney): another client's session cannot be closed; Properties.Set on a
    /// locked collection answers IsLocked by name; GetSecrets answers a path given twice once.
    @Test func sessionsErrorsAndRepeatedPathsOverRawDBus() throws {
        try CLIBackend.withVault { _ in
            let script = """
                from jeepney import DBusAddress, new_method_call
                from jeepney.io.blocking import open_dbus_connection
                from jeepney.wrappers import DBusErrorResponse, unwrap_msg
                S = "org.freedesktop.secrets"
                a, b = open_dbus_connection("SESSION"), open_dbus_connection("SESSION")
                def call(c, path, iface, method, sig=None, body=()):
                    return unwrap_msg(c.send_and_get_reply(new_method_call(DBusAddress(path, bus_name=S, interface=iface), method, sig, body)))
                def error(f):
                    try:
                        f(); return "none"
                    except DBusErrorResponse as e:
                        return e.name
                svc = ("/org/freedesktop/secrets", "org.freedesktop.Secret.Service")
                _, session = call(a, *svc, "OpenSession", "sv", ("plain", ("s", "")))
                print(error(lambda: call(b, session, "org.freedesktop.Secret.Session", "Close")))
                item, _ = call(a, "/org/freedesktop/secrets/aliases/default", "org.freedesktop.Secret.Collection", "CreateItem",
                    "a{sv}(oayays)b", ({"org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"k": "v"})}, (session, b"", b"s3", "text/plain"), True))
                print(len(call(a, *svc, "GetSecrets", "aoo", ([item, item], session))[0]))
                call(a, *svc, "Lock", "ao", ([item],))
                print(error(lambda: call(a, item, "org.freedesktop.DBus.Properties", "Set", "ssv", ("org.freedesktop.Secret.Item", "Label", ("s", "x")))))
                print(error(lambda: call(a, item, "org.freedesktop.Secret.Item", "GetSecret", "o", (session,))))
                """
            let result = try served("python3 -c '\(script)'")
            #expect(
                result.stdoutText
                    == "org.freedesktop.Secret.Error.NoSession\n1\norg.freedesktop.Secret.Error.IsLocked\n"
                    + "org.freedesktop.Secret.Error.IsLocked\n", "\(result.stderr)")
        }
    }

    /// The private dbus-daemon has no environment: the passphrase in serve's cannot be read from
    /// /proc/PID/environ (serve itself is not dumpable; the daemon is).
    @Test func thePrivateBusDaemonHoldsNoPassphrase() throws {
        try CLIBackend.withVault { _ in
            // The daemon's pid from the bus itself (not a search of the process list); only read.
            let result = try served(
                #"""
                p=$(dbus-send --session --print-reply=literal --dest=org.freedesktop.DBus /org/freedesktop/DBus \
                    org.freedesktop.DBus.GetConnectionUnixProcessID string:org.freedesktop.DBus | awk '{ print $2 }')
                [ "$(cat /proc/$p/comm)" = dbus-daemon ] && [ -r /proc/$p/environ ] || { echo "no daemon: $p"; exit 9; }
                tr '\0' '\n' < /proc/$p/environ | grep -c . ; true
                """#
            )
            #expect(result.stdoutText == "0\n", "\(result.stdoutText) \(result.stderr)")
        }
    }

    /// SIGTERM to `serve -- COMMAND` reaches the command, and serve exits with its status; when
    /// the bus itself goes away, serve exits 69 saying so.
    @Test func signalsReachTheCommandAndALostBusEndsServe() throws {
        try CLIBackend.withVault { _ in
            let command = """
                import signal, sys, time
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))
                open("ready", "w").close()
                time.sleep(30)
                """
            let result = try runProcess(
                "/bin/sh",
                [
                    "-c",
                    """
                    cd "$(mktemp -d)" && mkfifo ready
                    keychain-cli serve -- python3 -c '\(command)' & serve=$!
                    cat ready  # until the command, its handler set, has opened and closed the FIFO
                    kill -TERM $serve; wait $serve; echo "serve: $?"
                    """,
                ],
                environment: cliEnvironment(session: nil).merging([
                    "PATH": URL(fileURLWithPath: keychainCLIPath).deletingLastPathComponent().path + ":/usr/bin:/bin"
                ]) { $1 })
            #expect(result.stdoutText == "serve: 3\n", "\(result.stderr)")
            // serve starts the dbus-daemon found in PATH: here one that writes down its pid and
            // execs the real one, so the bus the test ends is one whose pid it knows from the
            // start (serve's child, not reaped while serve runs the command). The command, asleep
            // until then, is ended by serve (SIGTERM) once the bus is gone.
            let directory = try ScratchDirectory("lost-bus")
            defer { directory.remove() }
            let daemon = directory.path("dbus-daemon")
            try Data("#!/bin/sh\necho $$ > '\(directory.path("pid"))'\nexec /usr/bin/dbus-daemon \"$@\"\n".utf8)
                .write(to: URL(fileURLWithPath: daemon))
            chmod(daemon, 0o755)
            let lost = try runProcess(
                keychainCLIPath,
                ["serve", "--", "sh", "-c", #"kill "$(cat "$0")" && exec sleep 60"#, directory.path("pid")],
                environment: cliEnvironment(session: nil).merging(["PATH": "\(directory.url.path):/usr/bin:/bin"]) {
                    $1
                },
                timeout: 30)
            #expect(lost.status == 69 && lost.stderr.contains("closed serve's connection"), "\(lost.stderr)")
        }
    }

    /// A second attack: a secret another process rewrote within the same second reaches serve's
    /// clients as ItemChanged (the item's dates had not moved), and an export of more secrets than
    /// serve puts in one GetSecrets reply (64 MiB) reads the rest one by one.
    @Test func sameSecondRewritesAreAnnouncedAndALargeExportIsWhole() throws {
        try CLIBackend.withVault { _ in
            #expect(try cli(["-s", "S", "set", "k"], input: "v0").status == 0)
            // Each rewrite's ItemChanged is awaited before the next rewrite.
            let rewrites = try served(
                """
                monitor "type=signal,sender=org.freedesktop.secrets,member=ItemChanged" || exit 7
                for i in 1 2; do
                    printf "v$i" | KEYCHAIN_PASSPHRASE="$PW" keychain-cli -s S set k || exit 8
                    upto 'path=/org/freedesktop/secrets/collection/login;' && echo "v$i announced"
                done
                kill $monitor
                """, extra: ["PW": CLIBackend.passphrase])
            #expect(rewrites.stdoutText == "v1 announced\nv2 announced\n", "\(rewrites.stderr)")

            let megabyte = String(repeating: "x", count: 1 << 20)
            let items = (0..<66).map { #"{"service":"big","key":"k\#($0)","encoding":"utf8","secret":"\#(megabyte)"}"# }
            let document = #"{"format":"keychain-cli-export","version":1,"items":[\#(items.joined(separator: ","))]}"#
            #expect(try cli(["import"], stdin: Data(document.utf8)).status == 0)
            let exported = try served(
                "KEYCHAIN_BACKEND=secret-service keychain-cli -s big export --yes | grep -o '\"key\" : \"k[0-9]*\"' | wc -l"
            )
            #expect(exported.stdoutText.trimmingCharacters(in: .whitespaces) == "66\n", "\(exported.stderr)")
        }
    }
}
