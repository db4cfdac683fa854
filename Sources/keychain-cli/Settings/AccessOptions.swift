import KeychainCore

extension AccessPolicy {
    /// What --access-log and --allow-exe ask for (serve, ssh-agent); the log's errors are the
    /// log's (74), not the vault's (whose hint names --vault).
    static func forCommand(logPath: String?, allowedExecutables: [String]) throws -> AccessPolicy {
        let result = Result { () throws(KeychainError) in
            try AccessPolicy(logPath: logPath, allowedExecutables: allowedExecutables)
        }
        if case .failure(.vaultIO(let detail)) = result { throw CommandFailure.io(detail) }
        return try result.get()
    }
}
