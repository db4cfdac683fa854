import CLibSecret
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import KeychainCore
@testable import KeychainDBus
@_spi(Testing) @testable import KeychainSecretService

/// The only suite that calls libsecret inside the test process: GDBus keeps one session-bus
/// connection per process, so this suite exports its private bus to the process before the
/// first call, and no other suite may call libsecret in-process.
struct InProcessKeyringTrait: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        setenv("DBUS_SESSION_BUS_ADDRESS", session.busAddress, 1)
        unsetenv("DISPLAY")
        try await KeyringSession.$current.withValue(session) { try await function() }
        session.recordIfItDied()
    }
}

/// The backends the store contract is checked on: the same tests, each backend.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory, vault, treeVault, secretService, openbao

    var testDescription: String { rawValue }

    /// A new store: an empty one for the in-memory store and the vault (a vault file of its own
    /// that does not exist yet), the suite's gnome-keyring for the Secret Service, a new KV
    /// mount of the shared `bao` dev server for OpenBao.
    func makeStore() throws -> any SecretStore {
        switch self {
        case .inMemory: return InMemorySecretStore()
        case .secretService: return SecretServiceStore(timeout: 10)
        case .openbao:
            let server = try OpenBaoServer.shared.get()
            let mount = "s" + UUID().uuidString.prefix(12).lowercased().replacing("-", with: "")
            try server.enableKV(mount)
            return OpenBaoStore(
                configuration: try OpenBaoConfiguration(
                    address: server.address, mount: mount, credentials: .token(server.rootToken, source: "test")),
                timeout: 10)
        case .vault:
            // The store outlives this function: its directory goes when the test process ends.
            let directory = try ScratchDirectory("store")
            removeAtExit(directory.url.path)
            let path = directory.path("vault/vault.age")
            return VaultStore(path: path, workFactor: 10) { _ in Array("passphrase".utf8) }
        case .treeVault:
            let directory = try ScratchDirectory("tree-store")
            removeAtExit(directory.url.path)
            let path = directory.path("vault")
            let passphrase = Array("passphrase".utf8)
            try TreeVaultStore.create(directory: path, recipients: [], passphrase: { passphrase }, workFactor: 10)
            return TreeVaultStore(directory: path, workFactor: 10) { _ in passphrase }
        }
    }
}

/// Every backend on the `SecretStore` contract (missing items are normal answers, bytes come back
/// exactly, one item per key, services are separate), and what only the Secret Service has.
@Suite("SecretStore backends: the contract on each, and a real gnome-keyring", .serialized, InProcessKeyringTrait())
struct SecretServiceStoreTests {
    let store = SecretServiceStore(timeout: 10)

    @Test(arguments: StoreKind.allCases)
    func setSecretsStoresEveryOneAndEmptyAndLargestSecretsRoundTrip(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let largest = Data((0..<Keychain.maximumSecretSize).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let secrets = try [("empty", Data()), ("largest", largest), ("text", Data("héllo".utf8))].map {
            SecretToStore(service: service, key: try KeychainKey($0.0), secret: $0.1)
        }
        var reported: [Int] = []
        try store.setSecrets(secrets) { reported.append($0) }
        #expect(reported.last == 3)
        for secret in secrets {
            #expect(try store.secret(service: service, key: secret.key) == secret.secret, "\(secret.key)")
        }
        #expect(try store.items(service: service).map(\.key).sorted() == ["empty", "largest", "text"])
    }

    /// What is there stays; a key given twice is added once, with its first secret.
    @Test(arguments: StoreKind.allCases)
    func addSecretsAddsOnlyTheFreeKeysAndSaysWhich(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let other = try ServiceName(uniqueService())
        try store.setSecret(Data("kept".utf8), service: service, key: try KeychainKey("there"))
        let secrets = try [
            (service, "there", "lost"), (service, "new", "first"), (other, "there", "o"),
            (service, "new", "second"),
        ].map { SecretToStore(service: $0.0, key: try KeychainKey($0.1), secret: Data($0.2.utf8)) }
        var reported: [Int] = []
        #expect(try store.addSecrets(secrets) { reported.append($0) } == [false, true, true, false])
        #expect(reported.last == 4)
        #expect(try store.secret(service: service, key: try KeychainKey("there")) == Data("kept".utf8))
        #expect(try store.secret(service: service, key: try KeychainKey("new")) == Data("first".utf8))
        #expect(try store.secret(service: other, key: try KeychainKey("there")) == Data("o".utf8))
        #expect(try store.addSecrets([]) { _ in } == [])
    }

    @Test(arguments: StoreKind.allCases)
    func storesReadsAndDeletesBytesExactly(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("bytes")
        let bytes = Data([0, 1, 2, 255, 0, 10]) + Data("tail".utf8)
        #expect(try store.secret(service: service, key: key) == nil)
        #expect(try !store.containsSecret(service: service, key: key))
        try store.setSecret(bytes, service: service, key: key)
        #expect(try store.secret(service: service, key: key) == bytes)
        #expect(try store.containsSecret(service: service, key: key))
        #expect(try store.deleteSecret(service: service, key: key))
        #expect(try store.secret(service: service, key: key) == nil)
        #expect(try !store.containsSecret(service: service, key: key))
        #expect(try !store.deleteSecret(service: service, key: key))
    }

    @Test(arguments: StoreKind.allCases)
    func replacingKeepsOneItem(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("k")
        try store.setSecret(Data("1".utf8), service: service, key: key)
        try store.setSecret(Data("2".utf8), service: service, key: key)
        #expect(try store.items(service: service).count == 1)
        #expect(try store.secret(service: service, key: key) == Data("2".utf8))
    }

    /// `generate`'s write: stores only where nothing is, and says which; on the vault and OpenBao
    /// exactly one of several threads adding the same key at once succeeds.
    @Test(arguments: StoreKind.allCases)
    func addStoresOnlyWhereNothingIs(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("added")
        #expect(try store.addSecret(Data("first".utf8), service: service, key: key))
        #expect(try !store.addSecret(Data("second".utf8), service: service, key: key))
        #expect(try store.secret(service: service, key: key) == Data("first".utf8))
        guard kind == .vault || kind == .treeVault || kind == .openbao else { return }
        var winners: [Int] = []
        for round in 0..<12 {
            let raced = try KeychainKey("raced-\(round)")
            let count = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                if (try? store.addSecret(Data("\(index)".utf8), service: service, key: raced)) == true {
                    count.withLock { $0 += 1 }
                }
            }
            winners.append(count.withLock { $0 })
        }
        #expect(winners == Array(repeating: 1, count: 12))
    }

    @Test(arguments: StoreKind.allCases)
    func itemsCarryTheDesignAttributesAndLabel(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        try store.setSecret(Data("x".utf8), service: service, key: KeychainKey("meta"))
        let item = try #require(store.items(service: service).first)
        #expect(item.service == service.rawValue)
        #expect(item.key == "meta")
        // The label serve shows; KV fields have no writer of their own.
        #expect(item.label == "\(service.rawValue)/meta (keychain-cli)")
        #expect(item.application == (kind == .openbao ? nil : "keychain-cli"))
        let created = try #require(item.created)
        #expect(abs(created.timeIntervalSinceNow) < 60)
        let all = try store.items(service: nil)
        #expect(all.contains(item))
    }

    @Test(arguments: StoreKind.allCases)
    func deleteAllRemovesOneServiceAndCounts(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let other = try ServiceName(uniqueService())
        for name in ["a", "b", "c"] { try store.setSecret(Data(name.utf8), service: service, key: KeychainKey(name)) }
        try store.setSecret(Data("keep".utf8), service: other, key: KeychainKey("a"))
        #expect(try store.deleteAll(service: service) == 3)
        #expect(try store.items(service: service).isEmpty)
        #expect(try store.secret(service: other, key: KeychainKey("a")) == Data("keep".utf8))
        #expect(try store.deleteAll(service: service) == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func listingManyItemsReturnsEveryOne(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        // More than one window of pipelined Properties.Get calls.
        let count = BoundedOperationWindow.value + 7
        for index in 0..<count {
            try store.setSecret(Data("\(index)".utf8), service: service, key: KeychainKey("k\(index)"))
        }
        let keys = Set(try store.items(service: service).map(\.key))
        #expect(keys == Set((0..<count).map { "k\($0)" }))
    }

    /// Every item this store creates carries the attributes libsecret's store gives it, whichever
    /// way it was written: `service`, `username`, `application` and `xdg:schema` (the schema's
    /// name), which libsecret adds to a lookup of a schema it matches by name; nothing else.
    @Test func createdItemsCarryExactlyLibsecretsAttributes() throws {
        let service = try ServiceName(uniqueService())
        for key in ["first", "second"] {
            try store.setSecret(Data(key.utf8), service: service, key: KeychainKey(key))
        }
        let attributes = try store.connection.withClient("read", seconds: 10) { client in
            let paths = try client.searchPaths([("service", service.rawValue)]).unlocked
            return try client.itemProperties(["Attributes"], of: paths).map { $0?[0]?.stringMap }
        }
        #expect(attributes.count == 2)
        for case let found? in attributes {
            #expect(Set(found.keys) == ["service", "username", "application", "xdg:schema"], "\(found)")
            #expect(found["xdg:schema"] == "org.freedesktop.Secret.Generic")
            #expect(found["application"] == "keychain-cli" && found["service"] == service.rawValue)
        }
    }

    /// A property the service does not have reads as absent, as GetAll would leave it out, and
    /// fails nothing (another provider may lack one that `list --json` reads); a gone item is nil.
    @Test func aPropertyTheServiceLacksReadsAsAbsentNotAsAFailure() throws {
        let service = try ServiceName(uniqueService())
        try store.setSecret(Data("x".utf8), service: service, key: KeychainKey("k"))
        let types = try store.connection.withClient("read", seconds: 10) { client in
            let paths = try client.searchPaths([("service", service.rawValue)]).unlocked
            let gone = "/org/freedesktop/secrets/collection/login/999999"
            return try client.itemProperties(["Label", "NoSuchProperty"], of: paths + [gone]).map {
                $0?.map { $0?.signature }
            }
        }
        #expect(types == [["s", nil], nil])
    }

    @Test func timeoutBoundsSilenceNotProgress() throws {
        // gnome-keyring takes about 15 ms per deleted item: deleting 200 outlasts a 1 s limit,
        // but every answer restarts it, so the reset completes.
        let service = try ServiceName(uniqueService())
        for index in 0..<200 {
            try store.setSecret(Data("v".utf8), service: service, key: KeychainKey("k\(index)"))
        }
        let started = Date()
        #expect(try SecretServiceStore(timeout: 1).deleteAll(service: service) == 200)
        print("deleted 200 items in \(Date().timeIntervalSince(started)) s with a 1 s timeout")
        #expect(try store.items(service: service).isEmpty)
    }

    /// export's read: one search per service and GetSecrets, answers in the order asked.
    @Test func manySecretsAtOnceComeInOrderWithNilForMissingItems() throws {
        let (service, other) = (try ServiceName(uniqueService()), try ServiceName(uniqueService()))
        try store.setSecret(Data("a".utf8), service: service, key: KeychainKey("a"))
        try store.setSecret(Data([0, 255, 10]), service: service, key: KeychainKey("bin"))
        try store.setSecret(Data("o".utf8), service: other, key: KeychainKey("a"))
        let asked = try [(service, "bin"), (service, "missing"), (other, "a"), (service, "a"), (other, "bin")].map {
            SecretAddress(service: $0.0, key: try KeychainKey($0.1))
        }
        #expect(try store.secrets(of: asked) == [Data([0, 255, 10]), nil, Data("o".utf8), Data("a".utf8), nil])
        #expect(try store.secrets(of: []).isEmpty)
    }

    /// export lists, asks, then reads: the read uses the paths its listing found, and looks
    /// afresh for an item deleted (or deleted and stored again) in between.
    @Test func secretsOfAListingReadTheListedItemsAndFindReplacedOnesAfresh() throws {
        let service = try ServiceName(uniqueService())
        for key in ["a", "b", "c"] { try store.setSecret(Data(key.utf8), service: service, key: KeychainKey(key)) }
        let exporter = SecretServiceStore(timeout: 10, listing: .keysOnly)
        let listing = try exporter.listing(service: service)
        #expect(listing.items.map(\.key).sorted() == ["a", "b", "c"])
        #expect((listing.found as? SecretServiceStore.ListedPaths)?.paths.count == 3)
        // Meanwhile another client deletes b, and deletes and stores c again (a new item).
        #expect(try store.deleteSecret(service: service, key: KeychainKey("b")))
        #expect(try store.deleteSecret(service: service, key: KeychainKey("c")))
        try store.setSecret(Data("c2".utf8), service: service, key: KeychainKey("c"))
        let asked = try ["c", "a", "b", "a"].map { SecretAddress(service: service, key: try KeychainKey($0)) }
        #expect(
            try exporter.secrets(of: asked, listedIn: listing) == [
                Data("c2".utf8), Data("a".utf8), nil, Data("a".utf8),
            ])
        // The same listing may be read again, and a read without one searches.
        #expect(
            try exporter.secrets(of: asked, listedIn: listing) == [
                Data("c2".utf8), Data("a".utf8), nil, Data("a".utf8),
            ])
        #expect(try exporter.secrets(of: asked) == [Data("c2".utf8), Data("a".utf8), nil, Data("a".utf8)])
        // A listing of another store (the in-memory one) is no record of this one: it searches.
        #expect(
            try exporter.secrets(of: asked, listedIn: InMemorySecretStore().listing(service: service))
                == [Data("c2".utf8), Data("a".utf8), nil, Data("a".utf8)])
    }

    @Test func keysOnlyListingReturnsTheSameItemsWithoutLabels() throws {
        let service = try ServiceName(uniqueService())
        for name in ["a", "b"] { try store.setSecret(Data(name.utf8), service: service, key: KeychainKey(name)) }
        let full = try store.items(service: service).sorted { $0.key < $1.key }
        let keysOnly = try SecretServiceStore(timeout: 10, listing: .keysOnly).items(service: service)
            .sorted { $0.key < $1.key }
        #expect(keysOnly.map(\.key) == full.map(\.key))
        #expect(keysOnly.allSatisfy { $0.label == nil && $0.created == nil && $0.application == "keychain-cli" })
        #expect(full.allSatisfy { $0.label != nil && $0.created != nil })
    }

    /// Each store owns the bus socket it opened, and closes it when it goes away: a program that
    /// makes a store per request does not gather open sockets.
    @Test func aStoreThatGoesAwayClosesItsBusSocket() throws {
        /// The descriptors open now, by kind (socket, anon_inode:[eventfd], pipe, a path).
        func open() -> [String: Int] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return names.reduce(into: [:]) { kinds, name in
                let target =
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name)) ?? "?"
                kinds[target.hasPrefix("anon_inode:") ? target : String(target.prefix { $0 != ":" }), default: 0] += 1
            }
        }
        let service = try ServiceName(uniqueService())
        _ = try SecretServiceStore(timeout: 10).secret(service: service, key: KeychainKey("k"))
        let before = open()
        for _ in 0..<30 {
            weak var goneDirect: SecretServiceConnection.DirectBus?
            do {
                let store = SecretServiceStore(timeout: 10)
                #expect(try store.secret(service: service, key: KeychainKey("k")) == nil)
                #expect(try !store.containsSecret(service: service, key: KeychainKey("k")))
                #expect(store.directBusAddress != nil, "no direct connection")
                goneDirect = store.connection.direct.withLock { $0 }
            }
            #expect(goneDirect == nil, "the store's socket outlived it")
        }
        let after = open()
        // Each leaked store would leave a socket (30 of them); other suites running meanwhile may
        // hold a few.
        for kind in ["socket", "anon_inode:[eventfd]"] {
            #expect(
                after[kind, default: 0] < before[kind, default: 0] + 10, "\(kind): before \(before), after \(after)")
        }
    }

    @Test func readsKeepOneEncryptedSessionAndReopenItWhenTheServiceForgetsIt() throws {
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("k")
        let secret = Data([0, 255, 10, 13] + Array("secret".utf8))
        try store.setSecret(secret, service: service, key: key)
        let reader = SecretServiceStore(timeout: 10)
        #expect(reader.keptSessionPath == nil)
        #expect(try reader.secret(service: service, key: try KeychainKey("missing")) == nil)
        // The session is asked for with the search, and its answer waits until a read needs it.
        #expect(reader.keptSessionPath == nil && reader.hasSessionOnItsWay)
        #expect(reader.directBusAddress == KeyringSession.current?.busAddress, "not the direct connection")
        #expect(try reader.secret(service: service, key: key) == secret)
        let first = try #require(reader.keptSessionPath)
        #expect(first.hasPrefix("/org/freedesktop/secrets/session/"))
        #expect(!reader.hasSessionOnItsWay, "the read took the session asked for with the miss")
        #expect(try reader.secret(service: service, key: key) == secret)
        #expect(reader.keptSessionPath == first, "the second read reuses the session")
        #expect(!reader.hasSessionOnItsWay, "no other session is asked for while one is kept")
        // The service forgets the session, as a restarted gnome-keyring would.
        try reader.closeKeptSessionOnTheService()
        #expect(throws: KeychainError.self) { try reader.closeKeptSessionOnTheService() }
        #expect(try reader.secret(service: service, key: key) == secret)
        #expect(reader.keptSessionPath != first)
    }

    @Test func everyFreshSessionDecrypts() throws {
        // One shared value in 256 starts with a zero byte, which both sides must hash as 128 bytes;
        // 300 exchanges meet that case with a probability of about 70% (and the unit tests always).
        // (They take about a second: not worth fewer.)
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("k")
        let secret = Data((0..<100).map { UInt8($0) })
        try store.setSecret(secret, service: service, key: key)
        var failures = 0
        for _ in 0..<300 where try SecretServiceStore(timeout: 10).secret(service: service, key: key) != secret {
            failures += 1
        }
        #expect(failures == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func keychainFacadeCachesRealReads(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let keychain = Keychain(service: try ServiceName(uniqueService()), store: store)
        let key = try KeychainKey("cached")
        try keychain.set("v1", for: key)
        #expect(try keychain.string(for: key) == "v1")
        // Changed behind the facade's back: the cached value is still served...
        try store.setSecret(Data("v2".utf8), service: keychain.service, key: key)
        #expect(try keychain.string(for: key) == "v1")
        // ...until the cache is cleared.
        keychain.removeCachedSecrets()
        #expect(try keychain.string(for: key) == "v2")
    }
}

/// The window size of pipelined calls, restated here so the test covers more than one window.
enum BoundedOperationWindow {
    static let value = 128
}
