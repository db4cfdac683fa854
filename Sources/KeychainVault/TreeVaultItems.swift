import Dispatch
import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

// The store's operations on a tree vault: a read opens one file; a listing reads the tree's names
// (and decrypts each item only for what the names do not tell: dates, labels, details); a write
// decides, under the vault's lock, on the file that is there now, and replaces that file alone.
extension TreeVaultStore {
    public func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        try entry(at: SecretAddress(service: service, key: key))?.secret
    }

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try setSecrets([SecretToStore(service: service, key: key, secret: secret)]) { _ in }
    }

    /// Each secret written in turn, each file whole: a failure leaves those before it written.
    public func setSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) {
        guard !secrets.isEmpty else { return }
        let now = VaultStore.now()
        try underLock { () throws(KeychainError) in
            let recipients = try recipients()
            for (index, item) in secrets.enumerated() {
                let address = SecretAddress(service: item.service, key: item.key)
                var old: VaultStore.Entry?
                do throws(KeychainError) {
                    old = try entry(at: address)
                } catch {
                    // A forgery is replaced, not carried over (its dates and details).
                    guard case .notSigned = error else { throw error }
                }
                try write(
                    VaultStore.Entry(
                        secret: item.secret, created: old?.created ?? now, modified: now, details: old?.details),
                    at: address, to: recipients)
                progress(index + 1)
            }
        }
    }

    /// Decided under the lock, each on the file that is there now.
    public func addSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) -> [Bool] {
        guard !secrets.isEmpty else { return [] }
        let now = VaultStore.now()
        return try underLock { () throws(KeychainError) in
            let recipients = try recipients()
            var added: [Bool] = []
            for item in secrets {
                let address = SecretAddress(service: item.service, key: item.key)
                guard try !occupied(address) else {
                    added.append(false)
                    continue
                }
                try write(
                    VaultStore.Entry(secret: item.secret, created: now, modified: now, details: nil), at: address,
                    to: recipients)
                added.append(true)
            }
            progress(secrets.count)
            return added
        }
    }

    public func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try addSecrets([SecretToStore(service: service, key: key, secret: secret)]) { _ in }.first ?? false
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        guard Self.isTree(directory) else { return false }
        return try underLock { () throws(KeychainError) in try remove(SecretAddress(service: service, key: key)) }
    }

    public func deleteAll(service: ServiceName) throws(KeychainError) -> Int {
        guard Self.isTree(directory) else { return 0 }
        return try underLock { () throws(KeychainError) in
            var removed = 0
            for address in try addresses(service: service) where try remove(address) { removed += 1 }
            return removed
        }
    }

    public func containsSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try occupied(SecretAddress(service: service, key: key))
    }

    public func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] {
        let addresses = try addresses(service: service)
        guard listing == .full else {
            return addresses.map {
                ItemInfo(
                    service: $0.service.rawValue, key: $0.key.rawValue, label: nil, application: "keychain-cli",
                    created: nil, modified: nil)
            }
        }
        // Those removed meanwhile are left out.
        return zip(addresses, try entries(at: addresses)).compactMap { address, entry in
            entry.map { Self.info(of: $0, at: address) }
        }
    }

    /// A name whose escaped file name is too long for the file system is refused.
    public func checkName(service: ServiceName, key: KeychainKey) throws(KeychainError) {
        _ = try TreeVaultNames.relativePath(service: service, key: key)
    }

    /// The one item's file read, not the service's.
    public func item(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemInfo? {
        let address = SecretAddress(service: service, key: key)
        return try entry(at: address).map { Self.info(of: $0, at: address) }
    }

    private static func info(of entry: VaultStore.Entry, at address: SecretAddress) -> ItemInfo {
        ItemInfo(
            service: address.service.rawValue, key: address.key.rawValue,
            label: entry.details?.label ?? ItemInfo.defaultLabel(service: address.service, key: address.key),
            application: entry.details.map { $0.attributes["application"] } ?? "keychain-cli",
            created: entry.created, modified: entry.modified)
    }

    public func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        try entries(at: addresses).map { $0?.secret }
    }

    /// The items at `addresses` (nil where there is none), decrypted on every processor: each
    /// file costs an X25519 agreement, the whole cost of a long listing. The first failure, in
    /// the order of `addresses`, is thrown.
    func entries(at addresses: [SecretAddress]) throws(KeychainError) -> [VaultStore.Entry?] {
        _ = try identities()  // a passphrase is asked here, once, not by a worker
        let workers = min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), addresses.count / 32)
        guard workers > 1 else {
            var entries: [VaultStore.Entry?] = []
            for address in addresses { entries.append(try entry(at: address)) }
            return entries
        }
        let results = Locked([VaultStore.Entry?](repeating: nil, count: addresses.count))
        let failure = Locked<(index: Int, error: KeychainError)?>(nil)
        let underLock = VaultSigning.underLock  // the workers work for this thread
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            VaultSigning.$underLock.withValue(underLock) {
                var found: [(Int, VaultStore.Entry?)] = []
                for index in stride(from: worker, to: addresses.count, by: workers) {
                    do throws(KeychainError) {
                        found.append((index, try entry(at: addresses[index])))
                    } catch {
                        failure.withLock { if $0 == nil || $0!.index > index { $0 = (index, error) } }
                        break
                    }
                }
                results.withLock { results in for (index, entry) in found { results[index] = entry } }
            }
        }
        if let failure = failure.withLock({ $0 }) { throw failure.error }
        return results.withLock { $0 }
    }

    /// Whether an item is there now: a file that opens as the item (one that does not is
    /// ``KeychainError/itemCorrupt(path:reason:)``, not "already there").
    func occupied(_ address: SecretAddress) throws(KeychainError) -> Bool {
        guard try exists(address) else { return false }
        return try entry(at: address) != nil
    }

    /// Whether the item's file is there now.
    func exists(_ address: SecretAddress) throws(KeychainError) -> Bool {
        var info = stat()
        return lstat(try itemPath(address), &info) == 0
    }

    /// The items the tree's names give, of `service` or of every service, in order: the
    /// directories and files whose names are escaped names (see ``TreeVaultNames``); anything
    /// else (`.git`, `.recipients`, a README, a temporary file) is not an item.
    func addresses(service: ServiceName?) throws(KeychainError) -> [SecretAddress] {
        let services: [(ServiceName, String)]
        if let service {
            services = [(service, try TreeVaultNames.directory(of: service))]
        } else {
            services = Self.entries(of: directory, directories: true).compactMap { name in
                TreeVaultNames.service(directory: name).map { ($0, name) }
            }
        }
        return services.sorted { $0.0 < $1.0 }.flatMap { service, name in
            Self.entries(of: path(name), directories: false).compactMap(TreeVaultNames.key(fileName:)).sorted().map {
                SecretAddress(service: service, key: $0)
            }
        }
    }

    /// Every name in `directory` but dot names; none when it cannot be read.
    static func names(in directory: String) -> [String] {
        namesAndTypes(in: directory).map(\.name)
    }

    /// The names in `directory` of its subdirectories (`directories`) or of its regular files,
    /// dot names left out; none when it cannot be read.
    static func entries(of directory: String, directories: Bool) -> [String] {
        namesAndTypes(in: directory).compactMap { name, type in
            var type = type
            if type == UInt8(DT_UNKNOWN) {
                var info = stat()
                guard lstat("\(directory)/\(name)", &info) == 0 else { return nil }
                type =
                    (info.st_mode & S_IFMT) == S_IFDIR
                    ? UInt8(DT_DIR) : (info.st_mode & S_IFMT) == S_IFREG ? UInt8(DT_REG) : 0
            }
            return type == UInt8(directories ? DT_DIR : DT_REG) ? name : nil
        }
    }

    /// Every name in `directory` but dot names, with the type readdir gives; none when it cannot
    /// be read.
    private static func namesAndTypes(in directory: String) -> [(name: String, type: UInt8)] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var found: [(name: String, type: UInt8)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if !name.hasPrefix(".") { found.append((name, entry.pointee.d_type)) }
        }
        return found
    }
}
