/// A text input that cannot be read: what is wrong and where ("FILE:LINE: reason"), and whether
/// it is a usage mistake (an env file or template the user wrote, 64) or bad data (an import
/// file, 65).
package struct FormatError: Error, CustomStringConvertible {
    package var description: String
    package var isUsageError: Bool

    package init(_ description: String, isUsageError: Bool = false) {
        self.description = description
        self.isUsageError = isUsageError
    }
}
