import Foundation
import TestSupport
import Testing

@testable import KeychainCore

/// What a watch reported, collected from its thread.
final class WatchLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [String] = []

    func record(_ line: String) {
        condition.lock()
        events.append(line)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits up to `timeout` seconds until `count` events are recorded, and returns them all.
    func wait(for count: Int, timeout: Double = 10) -> [String] {
        let deadline = Date() + timeout
        condition.lock()
        defer { condition.unlock() }
        while events.count < count && condition.wait(until: deadline) {}
        return events
    }
}

extension SecretServiceStoreTests {
    @Test(arguments: StoreKind.allCases)
    func watchReportsAnotherStoresCreationChangeAndDeletion(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        // The writer is another store on the same backend (the in-memory store must be the same one).
        let writer = kind == .inMemory ? store : try kind.sameBackend(as: store)
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("k")
        let log = WatchLog()
        let watch = try store.watch(service: service, interval: 0.2) { event in
            switch event {
            case .change(let change): log.record("\(change.kind) \(change.service) \(change.key)")
            case .failure(let error): log.record("failure \(error)")
            }
        }
        defer { watch.cancel() }
        try writer.setSecret(Data("one".utf8), service: service, key: key)
        #expect(log.wait(for: 1) == ["created \(service) k"])
        try writer.setSecret(Data("two".utf8), service: try ServiceName(uniqueService()), key: key)
        try writer.setSecret(Data("three".utf8), service: service, key: key)
        #expect(log.wait(for: 2).last == "changed \(service) k")
        #expect(try writer.deleteSecret(service: service, key: key))
        #expect(log.wait(for: 3) == ["created \(service) k", "changed \(service) k", "deleted \(service) k"])
        watch.cancel()
        try writer.setSecret(Data("four".utf8), service: service, key: key)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(log.wait(for: 4, timeout: 0).count == 3, "no report after cancel()")
    }

    /// Two processes: this one reads through a watching `Keychain` (which caches), keychain-cli
    /// writes; the next read after the watcher saw the write returns the new value.
    @Test(arguments: [StoreKind.secretService, .vault, .treeVault, .openbao])
    func cachedReadNeverOutlivesAnotherProcessesWrite(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let keychain = Keychain(service: try ServiceName(uniqueService()), store: store)
        let key = try KeychainKey("token")
        let log = WatchLog()
        let watch = try keychain.watch(pollingEvery: 0.2) { result in
            if case .success(let change) = result {
                log.record("\(change.kind) \(change.key) \(change.transactionID.map { "own \($0)" } ?? "other")")
            }
        }
        defer { watch.cancel() }
        try keychain.set("from-this-process", for: key)
        #expect(try keychain.string(for: key) == "from-this-process")
        #expect(log.wait(for: 1) == ["created token own 1"])
        let result = try cli(
            ["-s", keychain.service.rawValue, "set", "token"], stdin: Data("from-keychain-cli".utf8),
            extra: kind.cliEnvironment(of: store))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(log.wait(for: 2) == ["created token own 1", "changed token other"])
        #expect(try keychain.string(for: key) == "from-keychain-cli")
    }
}

extension StoreKind {
    /// Another store on `store`'s backend: the same vault file, keyring or KV mount.
    func sameBackend(as store: any SecretStore) throws -> any SecretStore {
        switch store {
        case let vault as VaultStore:
            return VaultStore(path: vault.path, workFactor: 10) { _ in Array("passphrase".utf8) }
        case let tree as TreeVaultStore:
            return TreeVaultStore(directory: tree.directory, workFactor: 10) { _ in Array("passphrase".utf8) }
        case let openbao as OpenBaoStore:
            return OpenBaoStore(configuration: openbao.configuration, timeout: 10)
        default:
            return SecretServiceStore(timeout: 10)
        }
    }

    /// The environment in which keychain-cli uses `store`'s backend.
    func cliEnvironment(of store: any SecretStore) throws -> [String: String] {
        switch store {
        case let vault as VaultStore:
            return [
                "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": vault.path, "KEYCHAIN_PASSPHRASE": "passphrase",
            ]
        case let tree as TreeVaultStore:
            return [
                "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": tree.directory, "KEYCHAIN_PASSPHRASE": "passphrase",
            ]
        case let openbao as OpenBaoStore:
            let server = try OpenBaoServer.shared.get()
            return CLIBackend.openBaoEnvironment(server, mount: openbao.configuration.mount).compactMapValues { $0 }
        default:
            return [:]
        }
    }
}
