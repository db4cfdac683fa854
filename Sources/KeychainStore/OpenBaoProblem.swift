import KeychainSystem

/// What is wrong with the OpenBao backend's settings, its login or its mount
/// (``KeychainError/openBao(_:)``), as values: the description says what happened in this
/// library's words; which setting, variable or command fixes it is the caller's to say.
public enum OpenBaoProblem: Error, Equatable, Sendable, Codable, CustomStringConvertible {
    /// A setting given by a file's path holds `kind` (a token, a key) instead of a path; it is
    /// not repeated.
    case settingFileHoldsSecret(OpenBaoSetting, kind: String)
    /// A setting's file does not exist.
    case settingFileMissing(OpenBaoSetting, path: String)
    /// An AppRole login was set up with a role id or a secret id, not both.
    case halfAnAppRole
    /// The KV mount is not a mount path.
    case mountNotAPath(mount: String)
    /// No token, and no login to get one.
    case noToken
    /// The server refused the login (`status` and its error, `suffix`): the login's settings are
    /// to be checked.
    case loginRefused(OpenBaoLogin, source: String, status: Int, suffix: String)
    /// The mount is another engine, or KV version 1 (`engine` names which).
    case notKVVersion2(mount: String, address: String, engine: String)
    /// The server has no such mount.
    case noMount(mount: String, address: String)
    /// The answer for `path` is not a KV version 2 secret.
    case answerNotKVVersion2(path: String, mount: String)

    public var description: String {
        switch self {
        case .settingFileHoldsSecret(let setting, let kind):
            return "the file setting of the OpenBao \(setting) holds \(kind), not a path; it is not repeated here"
        case .settingFileMissing(let setting, let path):
            return "the file of the OpenBao \(setting), \(quotedPath(path)), does not exist"
        case .halfAnAppRole:
            return "AppRole login needs both a role id and a secret id"
        case .mountNotAPath(let mount):
            return "the OpenBao mount '\(escapedForDisplay(mount))' is not a mount path"
        case .noToken:
            return "no OpenBao token, and no AppRole or JWT login to get one"
        case .loginRefused(_, let source, let status, let suffix):
            return "the \(source) was refused (HTTP \(status)\(suffix))"
        case .notKVVersion2(let mount, let address, let engine):
            return "'\(mount)' on OpenBao at \(address) is \(engine), not a KV version 2 mount; nothing was read "
                + "or written"
        case .noMount(let mount, let address):
            return "OpenBao at \(address) has no mount '\(mount)'; nothing was read or written"
        case .answerNotKVVersion2(let path, let mount):
            return "OpenBao's answer for \(path) is not a KV version 2 secret: '\(mount)' may not be a KV "
                + "version 2 mount"
        }
    }
}

/// An OpenBao setting that can be given as a value or as a file's path.
public enum OpenBaoSetting: String, Equatable, Sendable, Codable, CustomStringConvertible {
    case roleID, secretID, jwt

    public var description: String {
        switch self {
        case .roleID: "AppRole role id"
        case .secretID: "AppRole secret id"
        case .jwt: "JWT"
        }
    }
}

/// How the OpenBao backend logs in for its token.
public enum OpenBaoLogin: String, Equatable, Sendable, Codable {
    case appRole, jwt
}
