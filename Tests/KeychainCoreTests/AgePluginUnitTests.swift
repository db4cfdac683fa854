import Foundation
import TestSupport
import Testing

@testable import KeychainAge
@testable import KeychainCore

/// A plugin's questions answered in memory: the prompts seen, `answer` to each.
private final class Answering: AgePluginQuestions, @unchecked Sendable {
    let answer: [UInt8]?
    let confirmed: Bool?
    private let seen = Locked<[String]>([])
    var prompts: [String] { seen.withLock { $0 } }

    init(answer: [UInt8]?, confirmed: Bool? = nil) { (self.answer, self.confirmed) = (answer, confirmed) }

    func show(_ message: String, plugin: String) -> Bool {
        seen.withLock { $0.append(message) }
        return true
    }
    func secret(_ prompt: String, plugin: String) -> [UInt8]? {
        seen.withLock { $0.append(prompt) }
        return answer
    }
    func value(_ prompt: String, plugin: String) -> [UInt8]? { secret(prompt, plugin: plugin) }
    func confirm(_ message: String, yes: String, no: String?, plugin: String) -> Bool? {
        seen.withLock { $0.append("\(message) [\(yes)/\(no ?? "")]") }
        return confirmed
    }
}

/// age plugins in one process: parsing, and AgeFile through the test plugin (Tests/plugins) with
/// the settings a program gives (its search path, timeout, questions). Serialized: the settings
/// are the process's.
@Suite("Age plugins in the library", .serialized)
struct AgePluginUnitTests {
    private static let directory = packageRoot.appendingPathComponent("Tests/plugins").path

    /// A key of the test plugin (`mode`: see the plugin), its identity and recipient.
    private func key(_ mode: String, recipientMode: String = "n") throws -> (
        identity: AgePlugin.Identity, recipient: AgePlugin.Recipient
    ) {
        let made = try runProcess(
            "\(Self.directory)/age-plugin-kctest", ["--generate", mode, recipientMode],
            environment: ["PATH": "/usr/bin:/bin"])
        let lines = made.stdoutText.split(separator: "\n").map(String.init)
        return (
            try #require(AgePlugin.Identity(lines[1])),
            try #require(AgePlugin.Recipient(lines[0].replacingOccurrences(of: "# recipient: ", with: "")))
        )
    }

    private func use(timeout: Double = 5, questions: any AgePluginQuestions = NoQuestions(), log: String? = nil) {
        AgePlugin.settings.withLock {
            $0 = AgePlugin.Settings(
                timeout: timeout, questions: questions, environment: log.map { ["KCTEST_LOG=\($0)"] } ?? [],
                searchPath: Self.directory)
        }
    }

    @Test func pluginRecipientsAndIdentitiesParseBesideTheKeysOfAge() throws {
        let (identity, recipient) = try key("n")
        let parsed = try VaultRecipient(recipient.encoded)
        #expect(parsed.key == recipient.encoded && (parsed.recipient as? AgePlugin.Recipient)?.name == "kctest")
        // A plain age1… recipient stays X25519.
        let x25519 = VaultIdentity()
        #expect(try VaultRecipient(x25519.recipient).recipient is AgeX25519.Recipient)
        // A checksum broken by one character is refused as an invalid age recipient.
        var broken = Array(recipient.encoded)
        broken[broken.count - 1] = broken.last == "q" ? "p" : "q"
        #expect(throws: RecipientError.self) { try VaultRecipient(String(broken)) }
        // A name with a character the spec does not allow is not a plugin's.
        #expect(AgePlugin.Recipient(Bech32.encode(hrp: "age1a/b", data: [1, 2, 3])) == nil)
        #expect(AgePlugin.Identity(Bech32.encode(hrp: "age-plugin-a/b-", data: [1]).uppercased()) == nil)
        // An identity file holding both kinds; a plugin identity is no recipient.
        let file = "# plugin\n\(identity.encoded)\n\(x25519.secretKeyLine!)\n"
        guard case .success(let identities) = VaultIdentity.parse(identityFile: file) else {
            Issue.record("the identity file was refused")
            return
        }
        #expect(identities.count == 2 && identities[0].key is AgePlugin.Identity)
        #expect(identities[0].key.mayBeIdentity(of: recipient.encoded))
        #expect(!identities[0].key.mayBeIdentity(of: x25519.recipient))
        #expect(throws: RecipientError.self) { try VaultRecipient(identity.encoded) }
    }

    /// Two recipients of the plugin and an X25519 one: one session wraps both plugin recipients;
    /// each identity opens the file; the plugin's identity is given every stanza.
    @Test func aFileForTwoPluginRecipientsAndAKeyOpensWithEach() throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("kctest-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        use(log: log)
        let (first, firstRecipient) = try key("n")
        let (second, secondRecipient) = try key("n")
        let x25519 = AgeX25519.Identity()
        let header = try AgeFile.makeHeader(recipients: [firstRecipient, x25519.recipient, secondRecipient])
        #expect(header.stanzaTypes == ["X25519", "kctest", "kctest"])
        let file = try AgeFile.encrypt(Array("plugin".utf8), header: header)
        for identity in [first, second] as [any AgeIdentity] + [x25519] {
            let opened = try AgeFile.decrypt(file, known: nil, identities: [identity]) { [] }
            #expect(opened.plaintext == Array("plugin".utf8))
        }
        let sessions = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(sessions.first?.hasPrefix("recipient-v1 ") == true && sessions.first?.hasSuffix(" 2 1") == true)
        #expect(sessions.dropFirst().allSatisfy { $0.hasPrefix("identity-v1 ") && $0.hasSuffix(" 1 3") })
        #expect(try AgeFile.identitiesOpening(file, [first]) == [0])
    }

    /// A question is answered by the program's answerer (a wrong PIN fails with the plugin's
    /// error); with no one to ask, the failure says that it needs a terminal.
    @Test func questionsGoToTheAnswererAndFailWithoutOne() throws {
        use()
        let (identity, recipient) = try key("a")
        let file = try AgeFile.encrypt([1], header: try AgeFile.makeHeader(recipients: [recipient]))
        let answering = Answering(answer: Array("1234".utf8))
        use(questions: answering)
        #expect(try AgeFile.decrypt(file, known: nil, identities: [identity]) { [] }.plaintext == [1])
        #expect(answering.prompts == ["PIN for the kctest key:"])
        use(questions: Answering(answer: Array("0000".utf8)))
        #expect(throws: AgePlugin.Failure.failed(plugin: "kctest", reason: "kctest was not given what it asked")) {
            try AgeFile.decrypt(file, known: nil, identities: [identity]) { [] }
        }
        use()
        #expect(throws: AgePlugin.Failure.needsTerminal(plugin: "kctest")) {
            try AgeFile.decrypt(file, known: nil, identities: [identity]) { [] }
        }
        // A question that had no one to answer it, which the plugin does without: no failure.
        let (optional, optionalRecipient) = try key("o")
        let both = try AgeFile.makeHeader(recipients: [try key("o", recipientMode: "o").recipient, optionalRecipient])
        #expect(
            try AgeFile.decrypt(try AgeFile.encrypt([3], header: both), known: nil, identities: [optional]) { [] }
                .plaintext == [3])
        let (confirming, confirmingRecipient) = try key("c")
        let confirmed = try AgeFile.encrypt([2], header: try AgeFile.makeHeader(recipients: [confirmingRecipient]))
        let yes = Answering(answer: nil, confirmed: true)
        use(questions: yes)
        #expect(try AgeFile.decrypt(confirmed, known: nil, identities: [confirming]) { [] }.plaintext == [2])
        #expect(yes.prompts == ["Use the kctest key? [Use it/Skip it]"])
    }

    /// A plugin that hangs is ended after the timeout; one missing from the search path is named.
    @Test func aHangingPluginTimesOutAndAMissingOneIsNamed() throws {
        use()
        let (identity, recipient) = try key("h")
        let file = try AgeFile.encrypt([1], header: try AgeFile.makeHeader(recipients: [recipient]))
        use(timeout: 0.5)
        let started = Date()
        #expect(throws: AgePlugin.Failure.timedOut(plugin: "kctest", seconds: 0.5)) {
            try AgeFile.decrypt(file, known: nil, identities: [identity]) { [] }
        }
        #expect(Date().timeIntervalSince(started) < 2.5)
        // One that ignores SIGTERM is killed a second later.
        let (stubborn, stubbornRecipient) = try key("H")
        use()
        let stubbornFile = try AgeFile.encrypt([1], header: try AgeFile.makeHeader(recipients: [stubbornRecipient]))
        use(timeout: 0.5)
        let again = Date()
        #expect(throws: AgePlugin.Failure.timedOut(plugin: "kctest", seconds: 0.5)) {
            try AgeFile.decrypt(stubbornFile, known: nil, identities: [stubborn]) { [] }
        }
        let took = Date().timeIntervalSince(again)
        #expect(took >= 1.4 && took < 3, "\(took) s")
        AgePlugin.settings.withLock { $0.searchPath = "/nonexistent:relative/\(Self.directory)" }
        #expect(throws: AgePlugin.Failure.notInPath(plugin: "kctest")) {
            try AgeFile.makeHeader(recipients: [recipient])
        }
        use()
    }
}
