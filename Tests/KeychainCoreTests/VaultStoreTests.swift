import Foundation
import TestSupport
import Testing

@testable import KeychainAge
@testable import KeychainCore
@testable import KeychainVault

private let passphrase = Array("a passphrase".utf8)

/// How many descriptors of this process are open on `path`.
private func descriptorsOpen(on path: String) -> Int {
    guard let resolved = realpath(path, nil) else { return 0 }
    let target = String(cString: resolved)
    free(resolved)
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return descriptors.filter {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == target
    }.count
}

/// The age format itself; interoperability with the real `age` is in the CLI tests.
@Suite("AgeFile: age v1 with a passphrase")
struct AgeFileTests {
    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 131_072, 200_000])
    func everySizeRoundTripsAcrossChunkBoundaries(size: Int) throws {
        let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let header = try AgeFile.makeHeader(passphrase: passphrase, workFactor: 10)
        let file = try AgeFile.encrypt(plaintext, header: header)
        // Header, 16-byte nonce, then each 64 KiB chunk plus a 16-byte tag (at least one chunk).
        let chunks = max(1, (size + 65_535) / 65_536)
        #expect(file.count == header.bytes.count + 16 + size + 16 * chunks)
        let (opened, reread) = try AgeFile.decrypt(file, known: nil) { passphrase }
        #expect(opened == plaintext)
        #expect(reread.bytes == header.bytes)
    }

    @Test func theHeaderHasTheShapeTheSpecificationGives() throws {
        let header = try AgeFile.makeHeader(passphrase: passphrase, workFactor: 12)
        let lines = String(decoding: header.bytes, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 5)  // version, stanza, body, MAC, and the empty rest after the last newline
        #expect(lines[0] == "age-encryption.org/v1")
        let stanza = lines[1].split(separator: " ")
        #expect(stanza.count == 4 && stanza[0] == "->" && stanza[1] == "scrypt" && stanza[3] == "12")
        #expect(stanza[2].count == 22)  // 16 bytes, unpadded base64
        #expect(lines[2].count == 43)  // the 32-byte wrapped file key
        #expect(lines[3].hasPrefix("--- ") && lines[3].count == 4 + 43)
        #expect(lines[4].isEmpty)
        #expect(!String(decoding: header.bytes, as: UTF8.self).contains("="))
    }

    @Test func aKnownHeaderSkipsScryptAndAWrongPassphraseIsRecognised() throws {
        let header = try AgeFile.makeHeader(passphrase: passphrase, workFactor: 10)
        let file = try AgeFile.encrypt(Array("x".utf8), header: header)
        var asked = 0
        _ = try AgeFile.decrypt(file, known: header) {
            asked += 1
            return passphrase
        }
        #expect(asked == 0)
        #expect(throws: AgeFile.Failure.wrongPassphrase) {
            try AgeFile.decrypt(file, known: nil) { Array("another".utf8) }
        }
    }

    @Test func twoWritesWithOneHeaderDifferInEveryPayloadByte() throws {
        let header = try AgeFile.makeHeader(passphrase: passphrase, workFactor: 10)
        let plaintext = [UInt8](repeating: 0, count: 64)
        let one = try AgeFile.encrypt(plaintext, header: header)
        let two = try AgeFile.encrypt(plaintext, header: header)
        let payloadOne = one.dropFirst(header.bytes.count)
        let payloadTwo = two.dropFirst(header.bytes.count)
        // A fresh nonce per write gives a fresh payload key: no keystream is ever reused.
        let equal = zip(payloadOne, payloadTwo).filter { $0 == $1 }.count
        #expect(equal < 10, "\(equal) of \(payloadOne.count) bytes equal")
    }
}

@Suite("VaultStore in one process")
final class VaultStoreTests {
    /// This test's directory, not yet created (a store creates it on its first write); removed
    /// with everything in it when the test ends.
    private let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("kc-core-\(UUID())")

    deinit { try? FileManager.default.removeItem(at: scratch) }

    private func scratchPath(_ name: String) -> String { scratch.appendingPathComponent(name).path }

    /// How many times scrypt runs in `body`.
    private func derivations(_ body: () throws -> Void) throws -> Int {
        let counter = AgeFile.DerivationCounter()
        try AgeFile.$derivationCounter.withValue(counter, operation: body)
        return counter.count.load(ordering: .relaxed)
    }

    @Test func aWriteDerivesTheKeyOnceAndLaterWritesNotAtAll() throws {
        let path = scratchPath("vault.age")
        let service = try ServiceName("s")
        let creator = VaultStore(path: path, workFactor: 10) { _ in passphrase }
        let creating = try derivations {
            try creator.setSecret(Data("1".utf8), service: service, key: KeychainKey("a"))
        }
        #expect(creating == 1)

        // Another process's view: opening the existing vault costs one derivation, then none.
        let writer = VaultStore(path: path, workFactor: 10) { _ in passphrase }
        let writing = try derivations {
            try writer.setSecret(Data("2".utf8), service: service, key: KeychainKey("b"))
            try writer.setSecret(Data("3".utf8), service: service, key: KeychainKey("c"))
            #expect(try writer.deleteSecret(service: service, key: KeychainKey("a")))
        }
        #expect(writing == 1)
        // The creator sees the writer's changes (the file changed, the header did not): no scrypt.
        let rereading = try derivations { () throws in
            #expect(try creator.items(service: service).map(\.key).sorted() == ["b", "c"])
        }
        #expect(rereading == 0)
    }

    @Test func thePassphraseIsAskedOnlyWhenNeededAndForTheRightPurpose() throws {
        let path = scratchPath("vault.age")
        let asked = Locked<[VaultStore.PassphrasePurpose]>([])
        let store = VaultStore(path: path, workFactor: 10) { purpose in
            asked.withLock { $0.append(purpose) }
            return passphrase
        }
        let service = try ServiceName("s")
        // No vault yet: reading needs no passphrase.
        #expect(try store.secret(service: service, key: KeychainKey("k")) == nil)
        #expect(try store.items(service: nil).isEmpty)
        #expect(try !store.deleteSecret(service: service, key: KeychainKey("k")))
        #expect(asked.withLock { $0 }.isEmpty)
        let directory = (path as NSString).deletingLastPathComponent
        #expect(!FileManager.default.fileExists(atPath: directory), "a delete of nothing created the vault's directory")
        // The directory, but no vault in it: a delete still asks nothing (it creates no vault).
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(try !store.deleteSecret(service: service, key: KeychainKey("k")))
        #expect(try store.deleteAll(service: service) == 0)
        #expect(asked.withLock { $0 }.isEmpty, "a delete in the vault's empty directory asked for a passphrase")
        try store.setSecret(Data("v".utf8), service: service, key: KeychainKey("k"))
        #expect(asked.withLock { $0 } == [.create])
        let reader = VaultStore(path: path, workFactor: 10) { purpose in
            asked.withLock { $0.append(purpose) }
            return passphrase
        }
        #expect(try reader.secret(service: service, key: KeychainKey("k")) == Data("v".utf8))
        #expect(asked.withLock { $0 } == [.create, .unlock])
    }

    @Test func aVaultPathThatIsASymbolicLinkStaysOneAndItsTargetIsWritten() throws {
        let target = scratchPath("real/vault.age")
        let link = scratchPath("vault.age")
        let service = try ServiceName("s")
        try VaultStore(path: target, workFactor: 10) { _ in passphrase }
            .setSecret(Data("1".utf8), service: service, key: KeychainKey("a"))
        try FileManager.default.createDirectory(
            atPath: (link as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let viaLink = VaultStore(path: link, workFactor: 10) { _ in passphrase }
        try viaLink.setSecret(Data("2".utf8), service: service, key: KeychainKey("b"))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        let direct = VaultStore(path: target, workFactor: 10) { _ in passphrase }
        #expect(try direct.secret(service: service, key: KeychainKey("b")) == Data("2".utf8))
    }

    @Test func anEmptyPassphraseIsRefused() throws {
        let store = VaultStore(path: scratchPath("vault.age"), workFactor: 10) { _ in [] }
        #expect(throws: KeychainError.noPassphrase(detail: "the passphrase given is empty")) {
            try store.setSecret(Data("v".utf8), service: ServiceName("s"), key: KeychainKey("k"))
        }
    }

    @Test func aDocumentFromANewerVersionIsRefusedNotMisread() throws {
        let path = scratchPath("vault.age")
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let header = try AgeFile.makeHeader(passphrase: passphrase, workFactor: 10)
        let document = #"{"format": "keychain-cli-vault", "version": 3, "items": []}"#
        try Data(AgeFile.encrypt(Array(document.utf8), header: header)).write(to: URL(fileURLWithPath: path))
        let store = VaultStore(path: path, workFactor: 10) { _ in passphrase }
        #expect {
            try store.items(service: nil)
        } throws: { error in
            guard case KeychainError.vaultCorrupt(_, let reason) = error else { return false }
            return reason.contains("version 3") && reason.contains("newer keychain-cli")
        }
    }

    /// serve's details live beside the secret: stored together, kept by a plain `set` of the same
    /// item, listed by detailedItems, and gone with the item.
    @Test func detailsAreKeptWithTheItemAndSurviveASetOfItsSecret() throws {
        let path = scratchPath("details.age")
        let store = VaultStore(path: path, workFactor: 10) { _ in passphrase }
        let service = try ServiceName("s")
        let key = try KeychainKey("k")
        let details = ItemDetails(
            attributes: ["service": "s", "username": "k", "x": "1"], label: "L", contentType: "a/b")
        try store.setSecret(Data("one".utf8), details: details, service: service, key: key)
        try store.setSecret(Data("two".utf8), service: service, key: key)
        let reopened = VaultStore(path: path, workFactor: 10) { _ in passphrase }
        #expect(try reopened.secret(service: service, key: key) == Data("two".utf8))
        let listed = try reopened.detailedItems()
        #expect(listed.count == 1 && listed.first?.details == details)
        #expect(try reopened.items(service: service).first?.label == "L")
        #expect(try reopened.secrets(of: [SecretAddress(service: service, key: key)]) == [Data("two".utf8)])
        #expect(try reopened.deleteSecret(service: service, key: key))
        #expect(try reopened.detailedItems().isEmpty)
    }

    /// A write waiting for another writer's directory lock holds nothing a read of the same store
    /// needs: the read answers from the file at once, and the write still fails as busy.
    @Test func aReadDoesNotWaitBehindAWriteWaitingForTheDirectoryLock() throws {
        let path = scratchPath("busy.age")
        let service = try ServiceName("s")
        let key = try KeychainKey("k")
        let store = VaultStore(path: path, workFactor: 10, lockTimeout: 3) { _ in passphrase }
        try store.setSecret(Data("kept".utf8), service: service, key: key)
        // Another writer (here, this test's own descriptor) holds the directory's lock.
        let directory = open(scratch.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(directory) }
        #expect(flock(directory, LOCK_EX) == 0)
        let writeEnded = DispatchSemaphore(value: 0)
        // nil while the write waits; then its error, or nil in the inner optional for success.
        let writeFailure = Locked<KeychainError??>(nil)
        Thread.detachNewThread {
            var failure: KeychainError?
            do throws(KeychainError) {
                try store.setSecret(Data("new".utf8), service: service, key: key)
            } catch {
                failure = error
            }
            writeFailure.withLock { $0 = .some(failure) }
            writeEnded.signal()
        }
        // Until the write waits for the lock: it opens the directory just before (a second
        // descriptor of it in this process, beside the test's).
        #expect(eventually(timeout: 10) { descriptorsOpen(on: scratch.path) >= 2 }, "the write never waited")
        #expect(try store.secret(service: service, key: key) == Data("kept".utf8))
        // The read came back while the write still waited (for 3 s): it did not wait behind it.
        #expect(writeFailure.withLock { $0 } == nil, "the read waited for the write")
        writeEnded.wait()
        #expect(writeFailure.withLock { $0 } == .some(.vaultBusy(path: path, seconds: 3)))
        flock(directory, LOCK_UN)
        try store.setSecret(Data("new".utf8), service: service, key: key)
        #expect(try store.secret(service: service, key: key) == Data("new".utf8))
    }

    /// A passphrase being asked (a prompt) holds no lock: a read of the same store answers at
    /// once, and another writer of the vault is not kept waiting behind the prompt.
    @Test func aPromptHoldsNoLockAReaderOrAnotherWriterWaitsFor() throws {
        let path = scratchPath("prompt.age")
        let (service, mine, theirs) = (try ServiceName("s"), try KeychainKey("mine"), try KeychainKey("theirs"))
        let answer = DispatchSemaphore(value: 0)
        let asked = DispatchSemaphore(value: 0)
        let asks = Locked(0)
        let slow = VaultStore(path: path, workFactor: 10, lockTimeout: 1) { _ in
            asks.withLock { $0 += 1 }
            asked.signal()
            answer.wait()  // the user is typing
            return passphrase
        }
        let writeEnded = DispatchSemaphore(value: 0)
        let failure = Locked<KeychainError?>(nil)
        // The vault does not exist yet: the write asks the passphrase of the vault it creates.
        Thread.detachNewThread {
            do throws(KeychainError) {
                try slow.setSecret(Data("mine".utf8), service: service, key: mine)
            } catch {
                failure.withLock { $0 = error }
            }
            writeEnded.signal()
        }
        asked.wait()
        let listed = Locked<Int?>(nil)
        let readEnded = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let count = try? slow.items(service: nil).count
            listed.withLock { $0 = count }
            readEnded.signal()
        }
        // (A hang guard, not a speed bound: a read that waited for the prompt would wait until the
        // answer below, after this.)
        let readWaited = readEnded.wait(timeout: .now() + 10) == .timedOut
        #expect(!readWaited, "the read waited for the prompt")
        // Another writer creates the vault meanwhile, within its 1 s of patience.
        let other = VaultStore(path: path, workFactor: 10, lockTimeout: 1) { _ in passphrase }
        #expect(throws: Never.self) { try other.setSecret(Data("theirs".utf8), service: service, key: theirs) }
        Thread.sleep(forTimeInterval: 1.2)  // longer than either writer would wait for the lock
        answer.signal()
        writeEnded.wait()
        if readWaited { readEnded.wait() }
        #expect(listed.withLock { $0 } == 0)
        #expect(failure.withLock { $0 } == nil)
        // Both writes are in the vault: the slow one read the other's version under the lock.
        let reopened = VaultStore(path: path, workFactor: 10) { _ in passphrase }
        #expect(try reopened.secret(service: service, key: theirs) == Data("theirs".utf8))
        #expect(try reopened.secret(service: service, key: mine) == Data("mine".utf8))
        #expect(asks.withLock { $0 } == 1)
    }
}
