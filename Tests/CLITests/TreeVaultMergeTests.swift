import Foundation
import TestSupport
import Testing

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
            name: "recipient removed and value changed / label changed",
            base: [.set("ci/a", base)], ours: [.edit("ci/a", label)],
            theirs: [.removeOther, .set("ci/a", theirs)], plainConflict: true,
            values: ["ci/a": theirs], plainValues: ["ci/a": base],
            check: { repo throws in
                // The merge of .recipients (theirs removed the member) is what the item is
                // encrypted to, though the work tree's .recipients still listed them.
                #expect(try repo.document("ci/a", identity: repo.otherIdentity) == nil)
                #expect(try repo.document("ci/a")?["label"] as? String == "Deploy key")
            }),
        MergeScenario(
            name: "recipient added / value changed", base: [.set("ci/a", base)], ours: [.set("ci/a", ours)],
            theirs: [.addRecipient], plainConflict: true, values: ["ci/a": ours],
            check: { repo throws in
                #expect(
                    try repo.document("ci/a", identity: repo.scratch.path("third.txt"))?["secret"] as? String == ours)
            }),
        MergeScenario(
            name: "one recipient added on both sides", base: [.set("ci/a", base)], ours: [.addRecipient],
            theirs: [.addRecipient], plainConflict: true, values: ["ci/a": base],
            plainValues: ["ci/a": base],
            check: { repo throws in
                // The same member added on both sides: listed once, and they open the merge.
                #expect(try repo.document("ci/a", identity: repo.scratch.path("third.txt")) != nil)
                let recipients = try repo.kc(["vault", "recipients", "list"]).stdoutText
                #expect(recipients.split(separator: "\n").count == 3, "\(recipients)")
            }),
        MergeScenario(
            name: "one recipient removed on both sides", base: [.set("ci/a", base)], ours: [.removeOther],
            theirs: [.removeOther], plainConflict: true, values: ["ci/a": base],
            check: { repo throws in
                #expect(try repo.document("ci/a", identity: repo.otherIdentity) == nil)
                let key = try runProcess(
                    "/usr/bin/age", ["-d", "-i", repo.otherIdentity, "\(repo.vault)/.fingerprint.age"],
                    environment: repo.environment)
                #expect(key.status != 0)
                #expect(
                    try repo.kc(["vault", "textconv", repo.file("ci/a")]).stdoutText.contains("value: fingerprint"))
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
            name: "attributes added on each side", base: [.set("ci/a", base)],
            ours: [.edit("ci/a", #"d["attributes"] = {"owner": "ops"}"#)],
            theirs: [.edit("ci/a", #"d["attributes"] = {"env": "prod"}"#)], plainConflict: true,
            values: ["ci/a": base],
            check: { repo throws in
                let attributes = try repo.document("ci/a")?["attributes"] as? [String: String]
                #expect(attributes == ["owner": "ops", "env": "prod"])
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
}
