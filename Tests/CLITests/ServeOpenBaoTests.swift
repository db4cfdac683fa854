import Foundation
import TestSupport
import Testing

/// serve on an OpenBao mount shared with others, on a server that comes and goes, and under
/// other programs that delete and store its items again: what a second outside attack broke,
/// held as facts. Before, each of the first three ended serve for every client.
@Suite("serve: OpenBao shared, interrupted and rewritten under it")
struct ServeOpenBaoTests {
    /// A token that may read only its team's secrets (and list the mount): serve starts, serves
    /// what the token reads, and a secret it may not read, written meanwhile by someone else,
    /// is left out rather than ending serve (77, which systemd does not restart after).
    @Test func secretsTheTokenMayNotReadAreLeftOut() throws {
        try CLIBackend.withOpenBaoMount { server, mount in
            #expect(try cli(["-s", "team-a", "set", "k"], stdin: Data("ours".utf8)).status == 0)
            #expect(try cli(["-s", "payroll", "set", "k"], stdin: Data("theirs".utf8)).status == 0)
            let policy = """
                path "\(mount)/metadata/*" { capabilities = ["read", "list"] }
                path "\(mount)/data/team-a" { capabilities = ["read", "create", "update", "patch"] }
                path "\(mount)/data/secret-service" { capabilities = ["read", "create", "update", "patch"] }
                """
            #expect(try server.putPolicy("\(mount)-team", policy) == 204)
            let created = try server.api("POST", "auth/token/create", json: #"{"policies":["\#(mount)-team"]}"#)
            let token = try #require((jsonObject(created.body)["auth"] as? [String: Any])?["client_token"] as? String)
            let result = try served(
                """
                secret-tool lookup service team-a username k; echo
                monitor "type=signal,sender=org.freedesktop.secrets,member=ItemCreated"
                BAO_TOKEN="$ROOT" KEYCHAIN_BACKEND=openbao keychain-cli -s payroll2 set k <<EOF || exit 8
                hidden
                EOF
                # Two readable secrets written after it, each awaited as serve announces it: the
                # second is seen by a look that began after the first was seen, so after payroll2
                # was written, and listed it.
                for k in k3 k4; do
                    printf v | BAO_TOKEN="$ROOT" KEYCHAIN_BACKEND=openbao keychain-cli -s team-a set $k || exit 8
                    upto ItemCreated || exit 7
                done
                printf new | secret-tool store --label=t service team-a username k2 || exit 9
                secret-tool search --all service team-a 2>/dev/null | grep -c '^secret'
                """, extra: ["BAO_TOKEN": token, "ROOT": server.rootToken])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText == "ours\n4\n", "\(result.stderr)")
        }
    }

    /// OpenBao stalled for a while (here longer than the time limit, so the watcher's looks time
    /// out), then back: serve goes on, answers again, and sees what was written meanwhile.
    @Test func anOpenBaoThatStallsForAWhileDoesNotEndServe() throws {
        try StallProxy.withMount { server, _, proxied in
            let result = try served(
                """
                # Stalled until a look of the watcher's is held and has timed out (its client hung up).
                mkfifo "$STALL.held"; exec 5<> "$STALL.held"; touch "$STALL"
                until [ "$line" = "given up" ]; do read -r line <&5 || exit 7; done
                monitor "type=signal,sender=org.freedesktop.secrets,member=ItemCreated"
                BAO_ADDR="$DIRECT" BAO_TOKEN="$ROOT" KEYCHAIN_BACKEND=openbao keychain-cli -s blip set meanwhile <<EOF || exit 8
                written while serve was cut off
                EOF
                rm "$STALL"
                upto ItemCreated && secret-tool lookup service blip username meanwhile; echo
                printf after | secret-tool store --label=t service blip username after || exit 9
                secret-tool lookup service blip username after
                """,
                extra: proxied.merging(["DIRECT": server.address, "ROOT": server.rootToken, "KEYCHAIN_TIMEOUT": "1"]) {
                    a, _ in a
                },
                timeout: 120)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText == "written while serve was cut off\nafter", "\(result.stderr)")
        }
    }

    /// A secret another tool wrote with a value nested deeper than keychain-cli's JSON reader goes
    /// (valid JSON, which OpenBao keeps) is left out of serve's items instead of ending serve;
    /// keychain-cli names it as bad data (65), not as a mount that is not KV version 2.
    @Test func aSecretThatDoesNotDecodeIsLeftOut() throws {
        try CLIBackend.withOpenBaoMount { server, mount in
            let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
            #expect(try server.api("PUT", "\(mount)/data/other", json: #"{"data":{"config":\#(deep)}}"#).status == 200)
            #expect(try cli(["-s", "app", "set", "k"], stdin: Data("v".utf8)).status == 0)
            let result = try served("secret-tool lookup service app username k")
            #expect(result.status == 0 && result.stdoutText == "v", "\(result.stderr)")
            let listed = try cli(["-s", "other", "list"])
            #expect(listed.status == 65 && listed.stderr.contains("does not decode as JSON"), "\(listed.stderr)")
        }
    }

    /// An item another program deletes and stores again (`keychain-cli delete`, then `set`, exit
    /// 0) is another item: a client still holding the first one's path gets UnknownMethod for
    /// Delete and SetSecret, and the new secret stays. Before, on OpenBao, whose watcher sees a
    /// changed value where the vault's sees a deletion, the stale path deleted or overwrote it.
    @Test(arguments: [ServedBackend.vault, .openbao])
    func anItemDeletedAndStoredAgainIsAnotherItem(backend: ServedBackend) throws {
        try backend.run { storage in
            let result = try served(
                """
                python3 -c 'from ssclient import *
                c = Client()
                deleted = c.listen("ItemDeleted")
                for method, body in (("Delete", ()), ("SetSecret", ((c.session, b"", b"stale", "text/plain"),))):
                    item = c.create({"service": "again", "username": method}, "first")
                    cli("-s", "again", "delete", method); cli("-s", "again", "set", method, stdin=b"second")
                    c.announced(deleted, item)  # once serve has seen the first one go
                    print(c.error(item, I_ITEM, method, "(oayays)" if body else None, body),
                          cli_output("-s", "again", "get", method).stdout.decode())'
                """, extra: storage.secretsForCommands)
            #expect(
                result.stdoutText
                    == "org.freedesktop.DBus.Error.UnknownMethod second\norg.freedesktop.DBus.Error.UnknownMethod second\n",
                "\(result.stderr)")
        }
    }
}
