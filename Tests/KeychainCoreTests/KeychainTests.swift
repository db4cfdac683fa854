import Foundation
import KeychainCore
import Testing

/// A store that counts the calls reaching it, to see what the cache keeps from the backend.
final class CountingStore: SecretStore {
    let inner = InMemorySecretStore()
    private let counts = Locked([String: Int]())

    func count(_ name: String) -> Int { counts.withLock { $0[name, default: 0] } }
    private func note(_ name: String) { counts.withLock { $0[name, default: 0] += 1 } }

    func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        note("secret")
        return try inner.secret(service: service, key: key)
    }
    func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        note("set")
        try inner.setSecret(secret, service: service, key: key)
    }
    func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try inner.deleteSecret(service: service, key: key)
    }
    func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] { try inner.items(service: service) }
    func deleteAll(service: ServiceName) throws(KeychainError) -> Int { try inner.deleteAll(service: service) }
}

private func key(_ name: String) throws -> KeychainKey { try KeychainKey(name) }

@Suite("Keychain facade over InMemorySecretStore")
struct KeychainTests {
    let store = CountingStore()
    let keychain: Keychain

    init() throws {
        keychain = Keychain(service: try ServiceName("app"), store: store)
    }

    @Test func storedBytesReadBackExactly() throws {
        let bytes = Data([0, 255, 10, 13, 0x80, 65])
        try keychain.set(bytes, for: key("bin"))
        #expect(try keychain.data(for: key("bin")) == bytes)
    }

    @Test func secondReadIsServedFromTheCache() throws {
        try keychain.set("v1", for: key("k"))
        #expect(try keychain.string(for: key("k")) == "v1")
        #expect(try keychain.string(for: key("k")) == "v1")
        #expect(store.count("secret") == 1)
    }

    @Test func storeAllRefusesEverythingWhenOneIsTooLargeAndOtherwiseStoresAllAndClearsTheCache() throws {
        try keychain.set("old", for: key("a"))
        _ = try keychain.data(for: key("a"))
        let other = try ServiceName("other")
        let tooLarge = try [
            SecretToStore(service: keychain.service, key: key("a"), secret: Data("new".utf8)),
            SecretToStore(service: other, key: key("big"), secret: Data(count: Keychain.maximumSecretSize + 1)),
        ]
        #expect(throws: KeychainError.secretTooLarge(limit: Keychain.maximumSecretSize)) {
            try keychain.storeAll(tooLarge)
        }
        #expect(try keychain.string(for: key("a")) == "old")
        var progress: [Int] = []
        try keychain.storeAll([tooLarge[0], SecretToStore(service: other, key: key("b"), secret: Data("x".utf8))]) {
            progress.append($0)
        }
        #expect(progress == [1, 2])
        #expect(try keychain.string(for: key("a")) == "new")
        #expect(try store.secret(service: other, key: key("b")) == Data("x".utf8))
    }

    @Test func ownWriteInvalidatesTheCache() throws {
        try keychain.set("v1", for: key("k"))
        _ = try keychain.data(for: key("k"))
        try keychain.set("v2", for: key("k"))
        #expect(try keychain.string(for: key("k")) == "v2")
        #expect(store.count("secret") == 2)
    }

    @Test func deleteInvalidatesTheCache() throws {
        try keychain.set("v1", for: key("k"))
        _ = try keychain.data(for: key("k"))
        #expect(try keychain.delete(key("k")))
        #expect(try keychain.data(for: key("k")) == nil)
        #expect(try !keychain.delete(key("k")))
    }

    @Test func missesAreNotCached() throws {
        #expect(try keychain.data(for: key("absent")) == nil)
        try store.inner.setSecret(Data("late".utf8), service: keychain.service, key: key("absent"))
        #expect(try keychain.string(for: key("absent")) == "late")
        #expect(store.count("secret") == 2)
    }

    @Test func otherWritersAreSeenAfterTheCacheIsCleared() throws {
        try keychain.set("v1", for: key("k"))
        _ = try keychain.data(for: key("k"))
        try store.inner.setSecret(Data("external".utf8), service: keychain.service, key: key("k"))
        #expect(try keychain.string(for: key("k")) == "v1")
        keychain.removeCachedSecrets()
        #expect(try keychain.string(for: key("k")) == "external")
    }

    @Test func resetRemovesOnlyItsOwnServiceAndEmptiesTheCache() throws {
        let other = Keychain(service: try ServiceName("other"), store: store)
        try keychain.set("a", for: key("a"))
        try keychain.set("b", for: key("b"))
        try other.set("c", for: key("c"))
        _ = try keychain.data(for: key("a"))
        #expect(try keychain.reset() == 2)
        #expect(try keychain.data(for: key("a")) == nil)
        #expect(try keychain.items().isEmpty)
        #expect(try other.string(for: key("c")) == "c")
    }

    @Test func itemsAreSortedByKeyWithMetadataButNoSecret() throws {
        for name in ["zeta", "alpha", "Mid"] { try keychain.set("secret-\(name)", for: key(name)) }
        let items = try keychain.items()
        #expect(items.map(\.key) == ["Mid", "alpha", "zeta"])
        #expect(items.allSatisfy { $0.service == "app" && $0.label?.hasSuffix("(keychain-cli)") == true })
        let json = String(decoding: try JSONEncoder().encode(items), as: UTF8.self)
        #expect(!json.contains("secret-"))
    }

    @Test func itemsOfAllServicesAreSortedByServiceThenKey() throws {
        try Keychain(service: try ServiceName("b"), store: store).set("1", for: key("x"))
        try Keychain(service: try ServiceName("a"), store: store).set("1", for: key("y"))
        try keychain.set("1", for: key("w"))
        #expect(try keychain.itemsOfAllServices().map { "\($0.service)/\($0.key)" } == ["a/y", "app/w", "b/x"])
    }

    @Test func textReadOfBinarySecretIsRefusedWithoutShowingIt() throws {
        try keychain.set(Data([0xff, 0xfe]), for: key("bin"))
        #expect(throws: KeychainError.self) { try keychain.string(for: key("bin")) }
        do {
            _ = try keychain.string(for: key("bin"))
        } catch let error as KeychainError {
            guard case .notText(let name) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(name == "bin")
        }
    }

    struct Credentials: Codable, Equatable {
        var user: String
        var token: String
    }

    @Test func codableValuesRoundTripAsJSON() throws {
        let value = Credentials(user: "ci", token: "t0k")
        try keychain.set(value: value, for: key("creds"))
        #expect(try keychain.value(Credentials.self, for: key("creds")) == value)
        #expect(try keychain.value(Credentials.self, for: key("none")) == nil)
        try keychain.set("not json", for: key("text"))
        #expect(throws: KeychainError.self) { try keychain.value(Credentials.self, for: key("text")) }
    }

    @Test func tooLargeSecretIsRefusedAndTheOldOneKept() throws {
        try keychain.set("old", for: key("k"))
        let huge = Data(count: Keychain.maximumSecretSize + 1)
        #expect(throws: KeychainError.secretTooLarge(limit: Keychain.maximumSecretSize)) {
            try keychain.set(huge, for: key("k"))
        }
        #expect(try keychain.string(for: key("k")) == "old")
        try keychain.set(Data(count: Keychain.maximumSecretSize), for: key("max"))
        #expect(try keychain.data(for: key("max"))?.count == Keychain.maximumSecretSize)
    }

    @Test func concurrentWritersAndReadersNeverSeeATornOrStaleValueAfterTheirWrite() throws {
        let keychain = self.keychain
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            let name = try! KeychainKey("k\(index % 8)")
            let value = "v\(index)"
            try! keychain.set(value, for: name)
            let read = try! keychain.string(for: name)!
            #expect(read.hasPrefix("v"))
        }
        for index in 0..<8 {
            let name = try key("k\(index)")
            keychain.removeCachedSecrets()
            let fresh = try store.inner.secret(service: keychain.service, key: name)
            #expect(try keychain.data(for: name) == fresh)
        }
    }
}

@Suite("Key and service names")
struct NameTests {
    @Test(arguments: [
        "github-token", "a b", "with/slash", "ключ", "-leading-dash", "emoji🔑", String(repeating: "x", count: 1024),
    ])
    func oddButValidNamesAreAccepted(_ name: String) throws {
        #expect(try KeychainKey(name).rawValue == name)
        #expect(try ServiceName(name).rawValue == name)
    }

    @Test(arguments: ["", "nul\u{0}", String(repeating: "x", count: 65_537)])
    func unusableNamesAreRefused(_ name: String) {
        #expect(throws: KeychainError.self) { try KeychainKey(name) }
        #expect(throws: KeychainError.self) { try ServiceName(name) }
    }

    // Issue 10, item 10: any other tool's item can be addressed, whatever its name holds.
    @Test(arguments: [
        "new\nline", "tab\there", "esc\u{1b}[31m", "rtl\u{202E}txt", "sep\u{2028}",
        String(repeating: "x", count: 65_536),
    ])
    func anyTextWithoutNULIsAName(_ name: String) throws {
        #expect(try KeychainKey(name).rawValue == name)
        #expect(try ServiceName(name).rawValue == name)
    }

    @Test func refusalNamesTheNUL() {
        #expect(throws: KeychainError.invalidName(kind: "key", reason: "the key name contains a NUL character")) {
            try KeychainKey("a\u{0}b")
        }
    }

    @Test func displayEscapingKeepsOneNamePerLineAndNothingRaw() {
        #expect(escapedForDisplay("plain name/with ünïcode") == "plain name/with ünïcode")
        #expect(escapedForDisplay("a\nb\tc\rd\\e") == "a\\nb\\tc\\rd\\\\e")
        #expect(
            escapedForDisplay("\u{1b}[31m\u{202E}\u{2028}\u{7F}\u{85}")
                == "\\u{001B}[31m\\u{202E}\\u{2028}\\u{007F}\\u{0085}")
        let messages = KeychainError.notFound(service: "s\u{1b}", key: "k\n").description
        #expect(!messages.unicodeScalars.contains { $0.value < 0x20 })
    }
}

@Suite("InMemorySecretStore")
struct InMemorySecretStoreTests {
    @Test func missingItemsAreNormalAnswersNotErrors() throws {
        let store = InMemorySecretStore()
        let service = try ServiceName("s")
        #expect(try store.secret(service: service, key: KeychainKey("k")) == nil)
        #expect(try !store.deleteSecret(service: service, key: KeychainKey("k")))
        #expect(try store.deleteAll(service: service) == 0)
        #expect(try store.items(service: nil).isEmpty)
    }

    @Test func replacingKeepsCreationDateAndUpdatesModification() throws {
        let store = InMemorySecretStore()
        let service = try ServiceName("s")
        try store.setSecret(Data("1".utf8), service: service, key: KeychainKey("k"))
        let first = try #require(store.items(service: service).first)
        Thread.sleep(forTimeInterval: 0.01)
        try store.setSecret(Data("2".utf8), service: service, key: KeychainKey("k"))
        let second = try #require(store.items(service: service).first)
        #expect(second.created == first.created)
        #expect(second.modified! > first.modified!)
        #expect(try store.items(service: service).count == 1)
    }
}

@Suite("Error messages")
struct ErrorMessageTests {
    /// One of every case, with details as the library writes them.
    static let everyCase: [KeychainError] = [
        .notFound(service: "s", key: "k"), .invalidName(kind: "key", reason: "the key name is empty"), .emptySecret,
        .secretTooLarge(limit: 1), .invalidData(key: "k", reason: "is not UTF-8 text; read it as bytes (data(for:))"),
        .noSessionBus(detail: "d"), .noSecretService(detail: "d"), .noDefaultCollection(detail: "d"),
        .locked(detail: "d"), .permissionDenied(detail: "d"), .timedOut(operation: "return the secret", seconds: 5),
        .backendFailure(detail: "the Secret Service failed: d"), .vaultIO(detail: "cannot read '/v'"),
        .insecureFile(detail: "'/v' can be read by other users; chmod 600 '/v'"),
        .vaultCorrupt(path: "/v", reason: "r"), .wrongPassphrase(path: "/v"), .noPassphrase(detail: "d"),
        .noNewPassphrase(detail: "d"), .noMatchingIdentity(path: "/v", detail: "d"), .vaultBusy(path: "/v", seconds: 5),
        .vaultRekeyed(path: "/v"), .badConfiguration(detail: "d"), .serverUnavailable(detail: "d"),
        .serverDenied(detail: "d"), .serverTimedOut(address: "http://127.0.0.1:8200", seconds: 5, detail: "d"),
        .notText(key: "k"), .notOneTimePassword(key: "k", reason: "is not text, so not a TOTP seed or otpauth:// URI"),
        .lastRecipient(path: "/v"), .holderNotOurs(socket: "/run/h.sock", uid: 65534),
        .openBao(.settingFileHoldsSecret(.secretID, kind: "a token")),
        .openBao(.settingFileMissing(.jwt, path: "/j")), .openBao(.halfAnAppRole), .openBao(.mountNotAPath(mount: "/")),
        .openBao(.noToken),
        .openBao(.loginRefused(.appRole, source: "AppRole login at auth/approle", status: 400, suffix: "")),
        .openBao(.notKVVersion2(mount: "kv", address: "http://127.0.0.1:8200", engine: "a KV version 1 mount")),
        .openBao(.noMount(mount: "kv", address: "http://127.0.0.1:8200")),
        .openBao(.answerNotKVVersion2(path: "kv/data/s", mount: "kv")),
    ]

    /// The library says what happened to which item or file; what to do next (an option, a
    /// command, a variable of the command-line tool) is its caller's to say.
    @Test func theLibrarySaysWhatHappenedInItsOwnWords() {
        for error in Self.everyCase {
            let text = error.description
            #expect(!text.isEmpty && !text.hasSuffix("."), "\(error)")
            for word in ["--", "keychain-cli", "KEYCHAIN_", "raise", "Pass ", "Set $", "unlock again", "keygen"] {
                #expect(!text.contains(word), "\(error) names '\(word)': \(text)")
            }
        }
    }

    @Test func notFoundNamesTheKeyAndTheServiceEscapedForOneLine() {
        #expect(
            KeychainError.notFound(service: "my service", key: "a\u{202E}b\\").description
                == "no secret named 'a\\u{202E}b\\\\' in service 'my service'")
    }

    /// A key that looks like a secret (a value given where the key goes) is not repeated.
    @Test func notFoundDoesNotRepeatAKeyThatLooksLikeASecret() {
        for key in ["ghp_0123456789abcdefghijABCDEFGHIJ", "line one\nline two", "AKIAIOSFODNN7EXAMPLE"] {
            let text = KeychainError.notFound(service: "s", key: key).description
            #expect(!text.contains(key) && !text.contains("line one"), "\(text)")
            #expect(text.hasPrefix("no secret named (a value that is not shown: "), "\(text)")
        }
    }

    @Test func theTwoPassphrasesAreTwoCases() {
        #expect(KeychainError.noPassphrase(detail: "d") != KeychainError.noNewPassphrase(detail: "d"))
        #expect(KeychainError.noNewPassphrase(detail: "d").description.contains("new passphrase"))
    }
}
