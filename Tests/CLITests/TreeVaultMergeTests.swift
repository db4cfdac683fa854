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

    init(_ label: String, driver: Bool) throws {
        scratch = try ScratchDirectory(label)
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
    /// of .git byte for byte, HOME and TMPDIR), or in any object of the repository, loose or
    /// packed, as git itself reads it (`cat-file --batch-all-objects`, zlib undone).
    func findSecrets(_ secrets: [String]) throws -> [String] {
        var found: [String] = []
        let needles = secrets.map { Data($0.utf8) }
        let enumerator = FileManager.default.enumerator(atPath: scratch.url.path)
        while let name = enumerator?.nextObject() as? String {
            let path = scratch.path(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let bytes = FileManager.default.contents(atPath: path)
            else { continue }
            for (index, needle) in needles.enumerated() where bytes.range(of: needle) != nil {
                found.append("\(secrets[index]) in \(name)")
            }
        }
        let objects = try git(["cat-file", "--batch-all-objects", "--batch"])
        #expect(objects.status == 0 && !objects.stdout.isEmpty, "\(objects.stderr)")
        for (index, needle) in needles.enumerated() where objects.stdout.range(of: needle) != nil {
            found.append("\(secrets[index]) in a git object")
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
            let made = try repo.kc(["vault", "keygen", "-o", repo.scratch.path("third.txt")])
            expectSuccess(made)
            expectSuccess(
                try repo.kc(["vault", "recipients", "add", made.stdoutText.trimmingCharacters(in: .newlines)]))
        case .removeOther: expectSuccess(try repo.kc(["vault", "recipients", "remove", repo.otherRecipient]))
        }
    }
}

/// Two branches of one tree vault, merged: what each side does, and what the merge must give.
struct MergeScenario: Sendable, CustomTestStringConvertible {
    var name: String
    var base: [TreeStep] = []
    var ours: [TreeStep]
    var theirs: [TreeStep]
    /// Whether plain git (no driver) stops with a conflict: the same file changed on both sides.
    var plainConflict: Bool
    /// The items the driver reports as conflicts; nil: the driver merges clean.
    var driverConflicts: [String]? = nil
    /// Whether git itself reports a modify/delete conflict (the driver is not run).
    var modifyDelete = false
    /// What `get` reads after the merge (after a conflict: what the work tree holds); nil: none.
    var values: [String: String?]
    /// What plain git leaves, when it differs from `values`.
    var plainValues: [String: String?]? = nil
    /// More checks on the driver's merge.
    var check: (@Sendable (TreeRepo) throws -> Void)? = nil

    var testDescription: String { name }

    static let (base, ours, theirs, same) = (
        "base-value-Qx81", "ours-value-Wm27", "theirs-value-Rk55", "same-value-Zt90"
    )
    static let label = TreeScenarioCode.label

    /// Every value a scenario stores: none may be found on disk.
    static let secrets = [base, ours, theirs, same]

    static let all: [MergeScenario] = [
        MergeScenario(
            name: "add/add different keys", ours: [.set("ci/a", ours)], theirs: [.set("ci/b", theirs)],
            plainConflict: false, values: ["ci/a": ours, "ci/b": theirs]),
        MergeScenario(
            name: "add/add one key, same value", ours: [.set("ci/a", same)], theirs: [.set("ci/a", same)],
            plainConflict: true, values: ["ci/a": same]),
        MergeScenario(
            name: "add/add one key, different values", ours: [.set("ci/a", ours)], theirs: [.set("ci/a", theirs)],
            plainConflict: true, driverConflicts: ["ci/a"], values: ["ci/a": ours]),
        MergeScenario(
            name: "change/change, same value", base: [.set("ci/a", base)], ours: [.set("ci/a", same)],
            theirs: [.set("ci/a", same)], plainConflict: true, values: ["ci/a": same]),
        MergeScenario(
            name: "change/change, different values", base: [.set("ci/a", base)], ours: [.set("ci/a", ours)],
            theirs: [.set("ci/a", theirs)], plainConflict: true, driverConflicts: ["ci/a"], values: ["ci/a": ours]),
        MergeScenario(
            name: "value changed / label changed", base: [.set("ci/a", base)], ours: [.set("ci/a", ours)],
            theirs: [.edit("ci/a", label)], plainConflict: true, values: ["ci/a": ours],
            check: { repo throws in
                let document = try repo.document("ci/a")
                #expect(document?["label"] as? String == "Deploy key")
                #expect(document?["secret"] as? String == ours)
            }),
        MergeScenario(
            name: "change/delete", base: [.set("ci/a", base)], ours: [.set("ci/a", ours)], theirs: [.delete("ci/a")],
            plainConflict: true, modifyDelete: true, values: ["ci/a": ours]),
        MergeScenario(
            name: "delete/delete", base: [.set("ci/a", base), .set("ci/b", base)], ours: [.delete("ci/a")],
            theirs: [.delete("ci/a")], plainConflict: false, values: ["ci/a": nil, "ci/b": base]),
        MergeScenario(
            name: "delete/change", base: [.set("ci/a", base)], ours: [.delete("ci/a")], theirs: [.set("ci/a", theirs)],
            plainConflict: true, modifyDelete: true, values: ["ci/a": theirs]),
        MergeScenario(
            name: "change one / add another", base: [.set("ci/a", base)], ours: [.set("ci/a", ours)],
            theirs: [.set("ci/b", theirs)], plainConflict: false, values: ["ci/a": ours, "ci/b": theirs]),
        MergeScenario(
            name: "recipient added / secret added", base: [.set("ci/a", base)], ours: [.addRecipient],
            theirs: [.set("ci/b", theirs)], plainConflict: false, values: ["ci/a": base, "ci/b": theirs],
            check: { repo throws in
                // The member added on our side opens what our side re-encrypted.
                #expect(try repo.document("ci/a", identity: repo.scratch.path("third.txt")) != nil)
            }),
        MergeScenario(
            name: "recipient removed / secret changed", base: [.set("ci/a", base), .set("ci/b", base)],
            ours: [.removeOther], theirs: [.set("ci/a", theirs)], plainConflict: true,
            values: ["ci/a": theirs, "ci/b": base],
            plainValues: ["ci/a": base, "ci/b": base],
            check: { repo throws in
                // Merged on the side that removed them: the member removed cannot open the merge.
                #expect(try repo.document("ci/a", identity: repo.otherIdentity) == nil)
                #expect(try repo.document("ci/a")?["secret"] as? String == theirs)
            }),
        MergeScenario(
            name: "two services", base: [.set("ci/a", base), .set("db/c", base)], ours: [.set("ci/a", ours)],
            theirs: [.set("db/c", theirs)], plainConflict: false, values: ["ci/a": ours, "db/c": theirs]),
        MergeScenario(
            name: "different attributes on each side",
            base: [.set("ci/a", base), .edit("ci/a", #"d["attributes"] = {"app": "x"}"#)],
            ours: [.edit("ci/a", #"d["attributes"]["owner"] = "ops""#)],
            theirs: [.edit("ci/a", #"d["attributes"]["env"] = "prod""#)], plainConflict: true,
            values: ["ci/a": base],
            check: { repo throws in
                let attributes = try repo.document("ci/a")?["attributes"] as? [String: String]
                #expect(attributes == ["app": "x", "owner": "ops", "env": "prod"])
            }),
        MergeScenario(
            name: "one attribute changed differently", base: [.set("ci/a", base)],
            ours: [.edit("ci/a", #"d["attributes"] = {"env": "staging"}"#)],
            theirs: [.edit("ci/a", #"d["attributes"] = {"env": "prod"}"#)], plainConflict: true,
            driverConflicts: ["ci/a"], values: ["ci/a": base]),
        MergeScenario(
            name: "labels changed differently", base: [.set("ci/a", base)],
            ours: [.edit("ci/a", #"d["label"] = "Ours"; d["attributes"] = {}"#)],
            theirs: [.edit("ci/a", #"d["label"] = "Theirs"; d["attributes"] = {}"#)], plainConflict: true,
            driverConflicts: ["ci/a"], values: ["ci/a": base]),
        MergeScenario(
            name: "created dates differ", base: [.set("ci/a", base)],
            ours: [.set("ci/a", ours), .edit("ci/a", #"d["created"] = "2021-06-01T00:00:00Z""#)],
            theirs: [.edit("ci/a", #"d["created"] = "2020-01-01T00:00:00Z"; "# + label)], plainConflict: true,
            values: ["ci/a": ours],
            check: { repo throws in
                let document = try repo.document("ci/a")
                #expect(document?["created"] as? String == "2020-01-01T00:00:00Z")
                #expect(document?["label"] as? String == "Deploy key")
            }),
    ]
}

@Suite("Tree vaults in git: merges, diffs and textconv, never a value on disk")
struct TreeVaultMergeTests {
    /// Each scenario merged by plain git (the files as opaque bytes) and by the merge driver
    /// after vault git-setup: the exit status, every value read back, the conflict named without a
    /// value, every item file still one stock age opens, and no value anywhere on disk.
    @Test(arguments: MergeScenario.all, [false, true])
    func merge(_ scenario: MergeScenario, driver: Bool) throws {
        let repo = try TreeRepo("tree-merge", driver: driver)
        defer { repo.remove() }
        for step in scenario.base { try step.apply(repo) }
        try repo.commit("base")
        expectSuccess(try repo.git(["checkout", "-q", "-b", "theirs"]))
        for step in scenario.theirs { try step.apply(repo) }
        try repo.commit("theirs")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        for step in scenario.ours { try step.apply(repo) }
        try repo.commit("ours")

        let merge = try repo.git(["merge", "--no-edit", "theirs"])
        let conflict = driver ? scenario.driverConflicts != nil || scenario.modifyDelete : scenario.plainConflict
        let output = merge.stdoutText + merge.stderr
        #expect(merge.status == (conflict ? 1 : 0), "\(output)")
        if driver {
            for item in scenario.driverConflicts ?? [] {
                #expect(merge.stderr.contains("conflict: \(item)"), "\(output)")
            }
            if scenario.driverConflicts == nil { #expect(!merge.stderr.contains("conflict:"), "\(output)") }
        }
        if scenario.modifyDelete { #expect(output.contains("CONFLICT (modify/delete)"), "\(output)") }
        for secret in MergeScenario.secrets { #expect(!output.contains(secret), "a value in git's output") }

        let values = driver ? scenario.values : scenario.plainValues ?? scenario.values
        // Plain git leaves a conflicted file as ours, or, when the bytes look like text to it, with
        // conflict markers inside (no longer an age file): only the files it merged are checked.
        let unmerged = try repo.git(["diff", "--name-only", "--diff-filter=U"]).stdoutText
            .split(separator: "\n").map(String.init)
        #expect(unmerged.isEmpty == !conflict, "\(unmerged)")
        for (item, value) in values where driver || !unmerged.contains("v/\(item).age") {
            #expect(try repo.get(item) == value, "\(item)")
            // Every item file left, merged or ours after a conflict, is an age file age opens.
            if value != nil { #expect(try repo.document(item)?["secret"] as? String == value, "\(item)") }
        }
        if driver, !conflict {
            try scenario.check?(repo)
            // git log -p shows each version through textconv: fingerprints, never a value.
            let log = try repo.git(["log", "-p", "--all"])
            #expect(log.status == 0 && log.stdoutText.contains("value: fingerprint "), "\(log.stderr)")
            for secret in MergeScenario.secrets { #expect(!log.stdoutText.contains(secret)) }
        }
        #expect(try repo.findSecrets(MergeScenario.secrets) == [])
    }

    /// The scan itself finds a value: in a file of TMPDIR, and in a git object only zlib holds.
    @Test func theScanForValuesFindsOne() throws {
        let repo = try TreeRepo("tree-scan", driver: false)
        defer { repo.remove() }
        let canary = "canary-value-Jd42"
        #expect(try repo.findSecrets([canary]) == [])
        let object = try runProcess(
            "/bin/sh", ["-c", #"printf %s "$C" | git -C "$R" hash-object -w --stdin"#],
            environment: repo.environment.merging(["C": canary, "R": repo.repo]) { $1 })
        expectSuccess(object)
        #expect(try repo.findSecrets([canary]) == ["\(canary) in a git object"])
        try Data(canary.utf8).write(to: URL(fileURLWithPath: "\(repo.tmp)/left"))
        #expect(try repo.findSecrets([canary]).contains("\(canary) in tmp/left"))
    }

    /// git-setup adds its line once and keeps the others, sets the local configuration to this
    /// keychain-cli, makes a missing fingerprint key; outside a git work tree it exits 69.
    @Test func gitSetupIsIdempotentAndNeedsAWorkTree() throws {
        let repo = try TreeRepo("tree-setup", driver: false)
        defer { repo.remove() }
        let attributes = "\(repo.vault)/.gitattributes"
        try Data("# ours\n*.txt text".utf8).write(to: URL(fileURLWithPath: attributes))
        try FileManager.default.removeItem(atPath: "\(repo.vault)/.fingerprint.age")
        let first = try repo.kc(["vault", "git-setup"])
        expectSuccess(first)
        #expect(first.stderr.contains(".fingerprint.age"), "\(first.stderr)")
        #expect(FileManager.default.fileExists(atPath: "\(repo.vault)/.fingerprint.age"))
        expectSuccess(try repo.kc(["vault", "git-setup"]))
        let expected = "# ours\n*.txt text\n*.age diff=keychain-cli-vault merge=keychain-cli-vault\n"
        #expect(try String(contentsOfFile: attributes, encoding: .utf8) == expected)
        let program = URL(fileURLWithPath: keychainCLIPath).resolvingSymlinksInPath().path
        for (name, value) in [
            ("merge.keychain-cli-vault.driver", "\(program) vault merge-driver %O %A %B %P"),
            ("diff.keychain-cli-vault.textconv", "\(program) vault textconv"),
            ("diff.keychain-cli-vault.cachetextconv", "false"),
        ] {
            #expect(try repo.git(["config", "--local", "--get", name]).stdoutText == value + "\n", "\(name)")
        }
        #expect(
            try repo.git(["config", "--local", "--get-all", "merge.keychain-cli-vault.driver"]).stdoutText
                .split(separator: "\n").count == 1)
        // A tree vault outside any git work tree: 69 for git-setup and diff, one line each.
        let lone = repo.scratch.path("lone")
        expectSuccess(try repo.kc(["vault", "init", lone, "--recipient", repo.otherRecipient]))
        for command in [["vault", "git-setup"], ["vault", "diff"]] {
            let outside = try repo.kc(["--vault", lone] + command, ["GIT_CEILING_DIRECTORIES": repo.scratch.url.path])
            #expect(outside.status == 69, "\(outside.stderr)")
            #expect(outside.stderr.contains("not in a git work tree"), "\(outside.stderr)")
            #expect(outside.stderr.split(separator: "\n").count == 1, "\(outside.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(lone)/.gitattributes"))
        // A single-file vault is not what these commands are for.
        let file = try repo.kc(["--vault", repo.scratch.path("vault.age"), "vault", "git-setup"])
        #expect(file.status == 64, "\(file.stderr)")
    }

    /// git diff, git log -p and git show run textconv: a changed value is a changed fingerprint,
    /// equal values share one, a value is never shown; a file no identity opens is one line.
    @Test func textconvShowsFingerprintsNeverValues() throws {
        let repo = try TreeRepo("tree-textconv", driver: true)
        defer { repo.remove() }
        let (first, second) = ("first-value-Hy63", "second-value-Pq19")
        try repo.set("ci/token", first)
        try repo.set("db/copy", first)
        try repo.commit("first")
        try repo.set("ci/token", second)
        try repo.commit("second")
        func fingerprint(_ text: String, _ prefix: String = "") -> [String] {
            text.split(separator: "\n").filter { $0.hasPrefix(prefix + "value: fingerprint ") }.map {
                String($0.dropFirst(prefix.count + "value: fingerprint ".count))
            }
        }
        let diff = try repo.git(["diff", "HEAD~1", "HEAD"])
        expectSuccess(diff)
        let (old, new) = (fingerprint(diff.stdoutText, "-"), fingerprint(diff.stdoutText, "+"))
        #expect(old.count == 1 && new.count == 1 && old != new && old.first?.count == 16, "\(diff.stdoutText)")
        let copy = try repo.kc(["vault", "textconv", repo.file("db/copy")])
        #expect(copy.status == 0 && fingerprint(copy.stdoutText) == old, "\(copy.stdoutText)")
        #expect(copy.stdoutText.contains("service: db\nkey: copy\n"))
        #expect(copy.stdoutText.contains("recipients: 2 stanzas (X25519×2)"))
        for command in [["log", "-p"], ["show", "HEAD"], ["diff", "HEAD~2"]] {
            let shown = try repo.git(command)
            expectSuccess(shown)
            #expect(shown.stdoutText.contains("value: fingerprint"), "\(command)")
            #expect(!shown.stdoutText.contains(first) && !shown.stdoutText.contains(second), "\(command)")
        }
        let locked = try repo.kc(["vault", "textconv", repo.file("ci/token")], ["KEYCHAIN_IDENTITY": ""])
        #expect(locked.status == 0, "\(locked.stderr)")
        #expect(locked.stdoutText.contains("cannot be opened with the identities given"))
        #expect(locked.stdoutText.contains("recipients: 2 stanzas (X25519×2)"))
        #expect(try repo.findSecrets([first, second]) == [])
    }

    /// vault diff: the work tree against HEAD (an untracked item too), and two revisions.
    @Test func vaultDiffSaysWhatChanged() throws {
        let repo = try TreeRepo("tree-diff", driver: true)
        defer { repo.remove() }
        let (zero, one, two) = ("zero-value-Bn31", "one-value-Vc08", "two-value-Lk77")
        try repo.set("ci/token", zero)
        try repo.set("ci/old", zero)
        try repo.set("ci/kept", zero)
        try repo.commit("base")
        func fingerprint(_ item: String) throws -> String {
            let shown = try repo.kc(["vault", "textconv", repo.file(item)]).stdoutText
            return String(shown.split(separator: "\n").first { $0.hasPrefix("value: fingerprint ") }!.dropFirst(19))
        }
        let before = try fingerprint("ci/token")
        try repo.set("ci/token", one)
        try repo.delete("ci/old")
        try repo.set("ci/new", two)
        try repo.edit("ci/kept", TreeScenarioCode.label)
        let lines = try repo.kc(["vault", "diff"])
        #expect(lines.status == 0, "\(lines.stderr)")
        let expected = [
            "~ ci/kept label changed",
            "~ ci/kept attributes changed",
            "+ ci/new created (value \(try fingerprint("ci/new")))",
            "- ci/old deleted",
            "~ ci/token value changed (\(before) → \(try fingerprint("ci/token")))",
        ]
        #expect(lines.stdoutText == expected.map { $0 + "\n" }.joined(), "\(lines.stdoutText)")
        try repo.commit("changes")
        let committed = try repo.kc(["vault", "diff", "HEAD~1", "HEAD"])
        #expect(committed.stdoutText == lines.stdoutText, "\(committed.stdoutText)")
        // A new member: .recipients, every item re-encrypted, the same fingerprint key.
        let third = try repo.kc(["vault", "keygen", "-o", repo.scratch.path("third.txt")]).stdoutText
            .trimmingCharacters(in: .newlines)
        expectSuccess(try repo.kc(["vault", "recipients", "add", third]))
        let added = try repo.kc(["vault", "diff"]).stdoutText
        #expect(added.contains("~ ci/token re-encrypted (recipients changed: 3 stanzas (X25519×3))\n"), "\(added)")
        #expect(added.contains("+ recipient \(third)\n") && added.contains("~ fingerprint key re-encrypted"))
        try repo.commit("third")
        // Removing one makes a new fingerprint key.
        expectSuccess(try repo.kc(["vault", "recipients", "remove", repo.otherRecipient]))
        let removed = try repo.kc(["vault", "diff"]).stdoutText
        #expect(removed.contains("- recipient \(repo.otherRecipient)\n"), "\(removed)")
        #expect(removed.contains("~ fingerprint key replaced (a new key)"), "\(removed)")
        #expect(try repo.document("ci/token", identity: repo.otherIdentity) == nil)
        let bad = try repo.kc(["vault", "diff", "--", "-p"])
        #expect(bad.status == 64, "\(bad.stderr)")
        for output in [lines.stdoutText, added, removed] {
            for value in [zero, one, two] { #expect(!output.contains(value)) }
        }
        #expect(try repo.findSecrets([zero, one, two]) == [])
    }

    /// The driver with no identity: a conflict that says which identity to give; ours untouched.
    @Test func theDriverWithoutAnIdentitySaysWhichToGive() throws {
        let repo = try TreeRepo("tree-noid", driver: true)
        defer { repo.remove() }
        try repo.set("ci/a", MergeScenario.base)
        try repo.commit("base")
        expectSuccess(try repo.git(["checkout", "-q", "-b", "theirs"]))
        try repo.edit("ci/a", TreeScenarioCode.label)
        try repo.commit("theirs")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        try repo.set("ci/a", MergeScenario.ours)
        try repo.commit("ours")
        let ours = try Data(contentsOf: URL(fileURLWithPath: repo.file("ci/a")))
        let merge = try repo.git(["merge", "--no-edit", "theirs"], ["KEYCHAIN_IDENTITY": ""])
        #expect(merge.status == 1)
        #expect(
            merge.stderr.contains("cannot merge ci/a") && merge.stderr.contains("$KEYCHAIN_IDENTITY"), "\(merge.stderr)"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: repo.file("ci/a"))) == ours)
        // With the identity, the same merge is clean, and stock age opens the result.
        expectSuccess(try repo.git(["merge", "--abort"]))
        expectSuccess(try repo.git(["merge", "--no-edit", "theirs"]))
        let document = try repo.document("ci/a", identity: repo.otherIdentity)
        #expect(document?["secret"] as? String == MergeScenario.ours && document?["label"] as? String == "Deploy key")
    }

    /// A recipient added on one branch, an item on the other: the item stays encrypted to its
    /// branch's recipients until every item is re-encrypted (docs: vault recipients add again).
    @Test func itemsMergedFromABranchWithoutANewRecipientAreReencryptedOnRequest() throws {
        let repo = try TreeRepo("tree-reencrypt", driver: true)
        defer { repo.remove() }
        try repo.commit("base")
        expectSuccess(try repo.git(["checkout", "-q", "-b", "theirs"]))
        try repo.set("ci/b", MergeScenario.theirs)
        try repo.commit("theirs")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        try TreeStep.addRecipient.apply(repo)
        try repo.commit("ours")
        expectSuccess(try repo.git(["merge", "--no-edit", "theirs"]))
        let third = repo.scratch.path("third.txt")
        #expect(try repo.document("ci/b", identity: third) == nil)
        let recipient = try repo.kc(["vault", "recipients", "list"]).stdoutText.split(separator: "\n").last.map(
            String.init)
        expectSuccess(try repo.kc(["vault", "recipients", "add", recipient ?? ""]))
        #expect(try repo.document("ci/b", identity: third)?["secret"] as? String == MergeScenario.theirs)
    }
}

/// Python for ``TreeRepo/edit(_:_:)``.
enum TreeScenarioCode {
    static let label = #"d["label"] = "Deploy key"; d.setdefault("attributes", {})"#
}
