import Foundation
import TestSupport
import Testing

/// A tree vault in a git repository of its own, in a scratch directory that holds everything the
/// commands write: the repository, the two members' identities, HOME and TMPDIR.
struct TreeRepo {
    let scratch: ScratchDirectory
    let repo: String
    let vault: String
    let tmp: String
    /// Ours (the vault's first recipient) and a second member's.
    let identity: String
    let otherIdentity: String
    let otherRecipient: String
    let environment: [String: String]

    /// A new vault for the two members, in a new repository (`vault git-setup` run when `driver`),
    /// committed; the scratch directory is removed when any of it fails.
    init(_ label: String, driver: Bool) throws {
        let scratch = try ScratchDirectory(label)
        do {
            try self.init(scratch: scratch, driver: driver)
        } catch {
            scratch.remove()
            throw error
        }
    }

    private init(scratch: ScratchDirectory, driver: Bool) throws {
        self.scratch = scratch
        repo = scratch.path("repo")
        vault = scratch.path("repo/v")
        tmp = scratch.path("tmp")
        identity = scratch.path("ours.txt")
        otherIdentity = scratch.path("other.txt")
        for directory in [tmp, scratch.path("home"), repo] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        var environment = cliEnvironment(session: nil)
        environment.merge(
            [
                "HOME": scratch.path("home"), "TMPDIR": tmp, "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": vault,
                "KEYCHAIN_IDENTITY": identity, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_TERMINAL_PROMPT": "0",
            ]
        ) { $1 }
        self.environment = environment
        let ours = try runProcess(
            keychainCLIPath, ["vault", "keygen", "-o", identity], environment: environment
        ).stdoutText.trimmingCharacters(in: .newlines)
        otherRecipient = try runProcess(
            keychainCLIPath, ["vault", "keygen", "-o", otherIdentity], environment: environment
        ).stdoutText.trimmingCharacters(in: .newlines)
        try expectSuccess(git(["init", "-q", "-b", "main"]))
        try expectSuccess(kc(["vault", "init", vault, "--recipient", ours, "--recipient", otherRecipient]))
        if driver { try expectSuccess(kc(["vault", "git-setup"])) }
        try commit("init")
    }

    func remove() { scratch.remove() }

    func kc(_ arguments: [String], _ extra: [String: String] = [:]) throws -> ProcessResult {
        try runProcess(keychainCLIPath, arguments, environment: environment.merging(extra) { $1 })
    }

    func git(_ arguments: [String], _ extra: [String: String] = [:]) throws -> ProcessResult {
        try runProcess("/usr/bin/git", ["-C", repo] + arguments, environment: environment.merging(extra) { $1 })
    }

    func commit(_ message: String) throws {
        try expectSuccess(git(["add", "-A"]))
        try expectSuccess(git(["commit", "-q", "--allow-empty", "-m", message]))
    }

    /// Stores `value` as SERVICE/KEY, from a variable (never a file, never argv).
    func set(_ item: String, _ value: String) throws {
        let (service, key) = split(item)
        try expectSuccess(kc(["-s", service, "set", key, "--from-env", "VALUE"], ["VALUE": value]))
    }

    func get(_ item: String) throws -> String? {
        let (service, key) = split(item)
        let result = try kc(["-s", service, "get", key])
        return result.status == 0 ? result.stdoutText : nil
    }

    func delete(_ item: String) throws {
        let (service, key) = split(item)
        try expectSuccess(kc(["-s", service, "delete", key]))
    }

    /// Changes an item's document as another tool would: age decrypts it into a pipe, python
    /// changes the JSON (`code` on `d`), age encrypts it to .recipients; no plaintext on disk.
    func edit(_ item: String, _ code: String) throws {
        let script = #"""
            age -d -i "$ID" "$F" | python3 -c 'import json, sys
            d = json.load(sys.stdin)
            exec(sys.argv[1])
            json.dump(d, sys.stdout)' "$CODE" | age -R "$V/.recipients" -o "$F.new" && mv "$F.new" "$F"
            """#
        try expectSuccess(
            runProcess(
                "/bin/sh", ["-c", script],
                environment: environment.merging(["ID": identity, "F": file(item), "CODE": code, "V": vault]) { $1 }))
    }

    /// The item's document as `age -d -i` (stock age) opens it with `identity`; nil when it does not.
    func document(_ item: String, identity: String? = nil) throws -> [String: Any]? {
        let opened = try runProcess(
            "/usr/bin/age", ["-d", "-i", identity ?? self.identity, file(item)], environment: environment)
        guard opened.status == 0 else { return nil }
        return try JSONSerialization.jsonObject(with: opened.stdout) as? [String: Any]
    }

    func file(_ item: String) -> String { "\(vault)/\(item).age" }

    /// Where any of `secrets` appears: in a file under the scratch directory (the work tree, all
    /// of .git byte for byte, HOME and TMPDIR), or in any object of the repository as git itself
    /// reads it (`cat-file --batch-all-objects`, zlib and deltas undone), loose and then packed.
    func findSecrets(_ secrets: [String]) throws -> [String] {
        var found: [String] = []
        let needles = secrets.map { Data($0.utf8) }
        func look(in bytes: Data, _ place: String) {
            for (index, needle) in needles.enumerated() where bytes.range(of: needle) != nil {
                let finding = "\(secrets[index]) in \(place)"
                if !found.contains(finding) { found.append(finding) }
            }
        }
        // Twice: with the objects loose, then packed (repack: zlib and deltas in one file).
        for pass in 0..<2 {
            if pass == 1 { expectSuccess(try git(["repack", "-a", "-d", "-q"])) }
            let enumerator = FileManager.default.enumerator(atPath: scratch.url.path)
            while let name = enumerator?.nextObject() as? String {
                let path = scratch.path(name)
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                    let bytes = FileManager.default.contents(atPath: path)
                else { continue }
                look(in: bytes, name)
            }
            let objects = try git(["cat-file", "--batch-all-objects", "--batch"])
            #expect(objects.status == 0 && !objects.stdout.isEmpty, "\(objects.stderr)")
            look(in: objects.stdout, "a git object")
        }
        return found
    }

    private func split(_ item: String) -> (String, String) {
        let parts = item.split(separator: "/", maxSplits: 1).map(String.init)
        return (parts[0], parts[1])
    }
}

func expectSuccess(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
}

/// A change one branch makes.
enum TreeStep: Sendable {
    case set(String, String)
    case delete(String)
    /// Python on the item's document `d`, through age (a label, attributes, dates).
    case edit(String, String)
    /// A third member's recipient added (`vault recipients add`: every item re-encrypted).
    case addRecipient
    /// The second member removed (re-encrypted, a new fingerprint key).
    case removeOther

    func apply(_ repo: TreeRepo) throws {
        switch self {
        case .set(let item, let value): try repo.set(item, value)
        case .delete(let item): try repo.delete(item)
        case .edit(let item, let code): try repo.edit(item, code)
        case .addRecipient:
            // One third member, whichever side adds them first makes their identity.
            let third = repo.scratch.path("third.txt")
            let made =
                FileManager.default.fileExists(atPath: third)
                ? try runProcess("/usr/bin/age-keygen", ["-y", third], environment: repo.environment)
                : try repo.kc(["vault", "keygen", "-o", third])
            expectSuccess(made)
            expectSuccess(
                try repo.kc(["vault", "recipients", "add", made.stdoutText.trimmingCharacters(in: .newlines)]))
        case .removeOther: expectSuccess(try repo.kc(["vault", "recipients", "remove", repo.otherRecipient]))
        }
    }
}

/// Python for ``TreeRepo/edit(_:_:)``.
enum TreeScenarioCode {
    static let label = #"d["label"] = "Deploy key"; d.setdefault("attributes", {})"#
}
