import Glibc

/// The one reader of this process's environment (`scripts/check-layout` allows `getenv` nowhere
/// else), and its one convention: a variable set to the empty string reads as unset
/// (docs/commands.md#environment). The one exception reads a value's exact bytes, empty
/// included: ``bytes(_:)``, for the vault's passphrase variables (where an empty one is refused)
/// and `set --from-env VAR` (which stores a value exactly).
package enum Environment {
    /// A variable whose value is not UTF-8 text.
    package struct NotText: Error {
        package let name: String
    }

    /// The text of `name`; nil when it is unset or empty.
    /// - Throws: ``NotText`` when it is not valid UTF-8 (Swift would turn bad bytes into U+FFFD,
    ///   so that two different values would name the same service or file).
    package static func text(_ name: String) throws(NotText) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        guard let text = String(validatingCString: value) else { throw NotText(name: name) }
        return text
    }

    /// The value of a variable the system sets (a path, a bus address, a display); nil when it
    /// is unset or empty. Bytes that are not UTF-8 become U+FFFD.
    package static func value(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    /// Whether `name` is set to something other than the empty string.
    package static func isSet(_ name: String) -> Bool {
        getenv(name).map { $0.pointee != 0 } ?? false
    }

    /// The exact bytes of `name`, empty included; nil only when it is unset.
    package static func bytes(_ name: String) -> [UInt8]? {
        guard let value = getenv(name) else { return nil }
        return Array(UnsafeRawBufferPointer(start: value, count: strlen(value)))
    }

    /// Overwrites the value of each of `names` where the environment keeps it, then unsets it:
    /// for secrets set only for a command that has started (`exec`'s, while it masks the
    /// command's output). Call it only while no other thread reads the environment.
    package static func erase(_ names: [String]) {
        for name in names {
            if let value = getenv(name) { explicit_bzero(value, strlen(value)) }
            unsetenv(name)
        }
    }

    /// Every `NAME=value` of the environment but those of `names`: the environment of a tool
    /// keychain-cli runs for itself (gpg, keepassxc-cli, unzip), without keychain-cli's secrets.
    package static func all(except names: Set<String>) -> [String] {
        var entries: [String] = []
        var cursor: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "="), !names.contains(String(text[..<equals])) { entries.append(text) }
            cursor = cursor.successor()
        }
        return entries
    }

    /// Every variable whose value starts with `prefix`, in the environment's order, its name and
    /// value as bytes (either may not be UTF-8): `exec`'s references (op run's rule: a value that
    /// is one as a whole).
    package static func variables(withValuePrefix prefix: String) -> [(name: [UInt8], value: [UInt8])] {
        var found: [(name: [UInt8], value: [UInt8])] = []
        var cursor: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = environ
        while let entry = cursor.pointee {
            cursor = cursor.successor()
            guard let equals = strchr(entry, Int32(UInt8(ascii: "="))) else { continue }
            guard strncmp(equals + 1, prefix, prefix.utf8.count) == 0 else { continue }
            found.append(
                (
                    Array(UnsafeRawBufferPointer(start: entry, count: equals - entry)),
                    Array(UnsafeRawBufferPointer(start: equals + 1, count: strlen(equals + 1)))
                ))
        }
        return found
    }
}
