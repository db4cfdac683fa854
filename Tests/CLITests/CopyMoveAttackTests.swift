import Foundation
import TestSupport
import Testing

/// What an outside attack on `cp` and `mv` found, each kept as a fact: another tool's item is
/// never taken along, racing moves leave one copy, a failed removal says both hold the secret,
/// the same vault by another path is the same item, a vault path inside a tree vault is refused,
/// and DST's failures name DST.
@Suite("cp and mv under attack", .keyringSession)
struct CopyMoveAttackTests {
    typealias Places = CopyMoveBackendsTests.Places

    /// Two tools' items under one service and key with different secrets: mv moves the one `get`
    /// reads, and the other stays where it was.
    @Test func anotherToolsItemUnderTheSameKeyIsNotRemoved() throws {
        let service = uniqueService()
        let environment = cliEnvironment()
        for (secret, app) in [("secret-ONE", "one"), ("secret-TWO", "two")] {
            let stored = try runProcess(
                "/usr/bin/secret-tool", ["store", "--label=\(app)", "service", service, "username", "tok", "app", app],
                stdin: Data(secret.utf8), environment: environment)
            #expect(stored.status == 0, "\(stored.stderr)")
        }
        let read = try cli(["-s", service, "get", "tok"]).stdoutText
        #expect(try cli(["-s", service, "mv", "tok", "moved"]).status == 0)
        #expect(try cli(["-s", service, "get", "moved"]).stdoutText == read)
        let other = read == "secret-ONE" ? "secret-TWO" : "secret-ONE"
        #expect(try cli(["-s", service, "get", "tok"]).stdoutText == other, "the other tool's item stays")
        _ = try cli(["-s", service, "reset", "--yes"])
    }

    /// Two moves of one SRC to two DSTs at once, to another backend: the secret ends at exactly
    /// one of them, and the loser says SRC is gone (1), never that it changed.
    @Test func racingMovesLeaveOneCopy() throws {
        let places = try Places()
        let service = uniqueService()
        for round in 0..<8 {
            #expect(
                try places.run(on: .vault, ["-s", service, "set", "src"], stdin: Data("race-\(round)".utf8)).status == 0
            )
            let moves = try ["d1", "d2"].map { destination in
                try CLIBackend.$overrides.withValue(places.environment(.vault)) {
                    try launchCLI(["-s", service, "mv", "src", destination] + places.options(.treeVault))
                }
            }
            let statuses = moves.map { move in
                try? move.input.close()
                move.process.waitUntilExit()
                return move.process.terminationStatus
            }
            let copies = try ["d1", "d2"].filter {
                try places.run(on: .treeVault, ["-s", service, "get", $0]).stdoutText == "race-\(round)"
            }
            #expect(copies.count == 1, "round \(round): copies at \(copies), statuses \(statuses)")
            #expect(Set(statuses).isSubset(of: [0, 1]), "round \(round): \(statuses)")
            #expect(try places.run(on: .vault, ["-s", service, "get", "src"]).status == 1)
            for name in ["d1", "d2"] { _ = try places.run(on: .treeVault, ["-s", service, "delete", name]) }
        }
    }

    /// SRC's vault locked by another process for longer than --timeout: the copy is made, the
    /// removal fails (75), and the message says that both hold the secret.
    @Test func aRemovalThatFailsSaysBothHoldTheSecret() throws {
        let places = try Places()
        let service = uniqueService()
        #expect(try places.run(on: .vault, ["-s", service, "set", "k"], stdin: Data("both".utf8)).status == 0)
        let holder = try ChildProcess(
            "/usr/bin/flock", [places.directory.path(""), "/bin/sleep", "30"], environment: [:])
        defer { holder.killAndWait() }
        eventually(timeout: 5) {
            (try? runProcess("/usr/bin/flock", ["-n", places.directory.path(""), "true"], environment: [:]).status) == 1
        }
        let moved = try places.run(
            on: .vault, ["-s", service, "--timeout", "1", "mv", "k", "k"] + places.options(.treeVault))
        #expect(moved.status == 75, "\(moved.stderr)")
        #expect(
            moved.stderr.contains("was copied to DST") && moved.stderr.contains("so both hold it"), "\(moved.stderr)")
        #expect(try places.run(on: .treeVault, ["-s", service, "get", "k"]).stdoutText == "both")
    }

    /// The same vault by another path (a link, `dir/..`, a hard link) is the same store: SRC
    /// and DST the same item (64), and --force never removes the only copy.
    @Test func theSameVaultByAnotherPathIsTheSameItem() throws {
        let places = try Places()
        let service = uniqueService()
        let vault = places.path(.vault)
        #expect(try places.run(on: .vault, ["-s", service, "set", "k"], stdin: Data("only".utf8)).status == 0)
        let link = places.directory.path("link.age")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: vault)
        let hard = places.directory.path("hard.age")
        #expect(Glibc.link(vault, hard) == 0)
        let dotted = places.directory.path("tree/../vault.age")
        for other in [link, hard, dotted] {
            for force in [[], ["--force"]] {
                let moved = try places.run(
                    on: .vault,
                    ["-s", service, "mv", "k", "k", "--to-vault", other, "--to-passphrase-file", places.passphraseFile]
                        + force)
                #expect(
                    moved.status == 64 && moved.stderr.contains("the same item"), "\(other) \(force): \(moved.stderr)")
            }
        }
        #expect(try places.run(on: .vault, ["-s", service, "get", "k"]).stdoutText == "only")
    }

    /// A vault path inside a tree vault would make a file the tree reads as an item: refused (64),
    /// for --to-vault and --vault alike; -r and --service-to take service names, not addresses.
    @Test func pathsAndAddressesThatNameTheWrongThingAreRefused() throws {
        let places = try Places()
        let service = uniqueService()
        #expect(try places.run(on: .vault, ["-s", service, "set", "k"], stdin: Data("v".utf8)).status == 0)
        let inside = places.path(.treeVault) + "/ci/secrets.age"
        let moved = try places.run(
            on: .vault,
            ["-s", service, "mv", "k", "k", "--to-vault", inside, "--to-passphrase-file", places.passphraseFile])
        #expect(moved.status == 64 && moved.stderr.contains("is inside the tree vault"), "\(moved.stderr)")
        #expect(try places.run(on: .vault, ["--vault", inside, "list"]).status == 64)
        #expect(!FileManager.default.fileExists(atPath: inside))
        for arguments in [["-r", service, "keychain://other"], ["--service-to", "keychain://other"]] {
            let refused = try places.run(on: .vault, ["-s", service, "mv"] + arguments)
            #expect(refused.status == 64 && refused.stderr.contains("SRC and DST are services"), "\(refused.stderr)")
        }
        #expect(try places.run(on: .vault, ["-s", service, "get", "k"]).stdoutText == "v")
    }

    /// DST's vault that cannot be opened (a wrong --to-passphrase-file, a team vault without
    /// --to-identity): the message names DST's vault and its --to-* options.
    @Test func dstsFailuresNameDST() throws {
        let places = try Places()
        let service = uniqueService()
        #expect(try places.run(on: .vault, ["-s", service, "set", "k"], stdin: Data("v".utf8)).status == 0)
        #expect(try places.run(on: .treeVault, ["-s", service, "set", "x"], stdin: Data("x".utf8)).status == 0)
        let wrong = places.directory.path("wrong")
        try Data("not it".utf8).write(to: URL(fileURLWithPath: wrong))
        let moved = try places.run(
            on: .vault,
            ["-s", service, "mv", "k", "k", "--to-vault", places.path(.treeVault), "--to-passphrase-file", wrong])
        #expect(moved.status == 77, "\(moved.stderr)")
        #expect(
            moved.stderr.contains("DST's vault '\(places.path(.treeVault))'")
                && moved.stderr.contains("--to-passphrase-file"))
        #expect(try places.run(on: .vault, ["-s", service, "get", "k"]).stdoutText == "v")
    }

    /// A vault path that is a symbolic link another user owns (planted in their directory) is
    /// refused, so that they cannot choose where a vault is written.
    @Test(.enabled(if: geteuid() == 0, "a link another user owns needs root to make"))
    func anotherUsersLinkIsNoVaultPath() throws {
        let places = try Places()
        let service = uniqueService()
        #expect(try places.run(on: .vault, ["-s", service, "set", "k"], stdin: Data("v".utf8)).status == 0)
        let link = places.directory.path("planted.age")
        try FileManager.default.createSymbolicLink(
            atPath: link, withDestinationPath: places.directory.path("chosen/v.age"))
        #expect(lchown(link, 65534, 65534) == 0)
        let copied = try places.run(
            on: .vault,
            ["-s", service, "cp", "k", "k", "--to-vault", link, "--to-passphrase-file", places.passphraseFile])
        #expect(copied.status == 64 && copied.stderr.contains("a symbolic link another user"), "\(copied.stderr)")
        #expect(!FileManager.default.fileExists(atPath: places.directory.path("chosen")))
    }
}
