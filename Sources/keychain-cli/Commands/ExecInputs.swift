import FoundationEssentials
import Glibc
import KeychainCore

/// What exec hands the command, every part read before it starts.
struct ExecInputs {
    /// The variables to set, in order (a literal of a .env file is not a secret: not masked).
    var variables: [ReadVariable] = []
    /// The files of `--file`, by name.
    var files: [(name: String, secret: [UInt8])] = []
    /// Every secret a variable or file was read from (not --from's), for --restart-on-change.
    var sources: [KeychainReference] = []

    /// Each secret of ``sources`` and where it went: "$NAME", "--file NAME" (for messages).
    var origins: [(source: KeychainReference, shown: String)] {
        variables.compactMap { variable in variable.source.map { ($0, "$" + variable.name) } }
            + zip(sources.suffix(files.count), files).map { ($0, "--file " + $1.name) }
    }

    /// The secrets the command is given, by where they go ("$NAME", "--file NAME"): masked.
    var secrets: [(shown: String, value: [UInt8])] {
        variables.filter(\.isSecret).map { ("$" + $0.name, $0.value) } + files.map { ("--file " + $0.name, $0.secret) }
    }

    /// Whether `other` gives the command the same variables and files.
    func gives(sameAs other: ExecInputs) -> Bool {
        variables.map(\.name) == other.variables.map(\.name) && variables.map(\.value) == other.variables.map(\.value)
            && files.map(\.name) == other.files.map(\.name) && files.map(\.secret) == other.files.map(\.secret)
    }
}

extension KeychainCLI.Exec {
    /// The environment's variables whose value is a reference (none with --no-references), as bytes.
    func inheritedReferences() -> [(name: [UInt8], value: [UInt8])] {
        noReferences ? [] : Environment.variables(withValuePrefix: KeychainReference.scheme)
    }

    /// The environment's references as variables, but those a mapping sets (`mapped`).
    /// - Throws: ``CommandFailure`` (64) for one whose name or value is not UTF-8 (read as it is,
    ///   it would name another secret, or another variable), or that is malformed.
    func inheritedMappings(except mapped: Swift.Set<String>, outcome: String) throws -> [EnvironmentMapping] {
        var mappings: [EnvironmentMapping] = []
        for (nameBytes, valueBytes) in inheritedReferences() {
            let shownName = String(decoding: nameBytes, as: UTF8.self)
            let origin =
                misplacedSecretKind(shownName) == nil
                ? "$" + escapedForDisplay(shownName) : "a variable (name not shown)"
            guard let name = String(validating: nameBytes, as: UTF8.self),
                let value = String(validating: valueBytes, as: UTF8.self)
            else {
                throw CommandFailure.usage(
                    "\(origin): its name or its keychain:// value is not UTF-8 text, so it names no secret; "
                        + "\(outcome). Write the reference in UTF-8 (%XX for a byte), or pass it on as it is with "
                        + "--no-references")
            }
            guard !mapped.contains(name) else { continue }
            let reference = try KeychainReference.parsed(value, at: origin, outcome: outcome)
            mappings.append(EnvironmentMapping(name: name, value: .reference(reference), origin: origin))
        }
        return mappings
    }

    /// Everything the command is given, read from `keychain`.
    /// - Throws: ``CommandFailure`` naming the variable or file of the first that cannot be read
    ///   (exit as get: 1 when missing, 65 for a binary secret, …), or two that set one name.
    /// - Parameter outcome: what a failure stops (a restart: "the command keeps running").
    func inputs(from keychain: Keychain, outcome: String = "nothing was run") throws -> ExecInputs {
        var variables = try sources.parsedMappings()
        // op run's rule: a variable whose value is a reference as a whole is replaced by what it
        // names, unless a mapping sets that variable anyway.
        variables += try inheritedMappings(except: Swift.Set(variables.map(\.name)), outcome: outcome)
        let fileMappings = try files.map { text throws(FormatError) in
            try EnvironmentMapping(option: text, named: "--file", isFile: true)
        }
        try EnvironmentMapping.checkNamedOnce(fileMappings)
        var inputs = ExecInputs()
        inputs.variables = try sources.read(variables, from: keychain, outcome: outcome, text: true)
        inputs.sources = inputs.variables.compactMap(\.source)
        if !fileMappings.isEmpty, let owner = inputs.variables.first(where: { $0.name == "CREDENTIALS_DIRECTORY" }) {
            let shown = variables.first { $0.name == owner.name }?.origin ?? "--from"
            throw CommandFailure.usage(
                "\(shown) would set CREDENTIALS_DIRECTORY, which --file sets to the directory of its files. "
                    + "Map that secret to another name")
        }
        for mapping in fileMappings {
            guard let reference = mapping.reference(defaultService: keychain.service.rawValue) else { continue }
            inputs.files.append((mapping.name, try keychain.value(of: reference, at: mapping.origin, outcome: outcome)))
            inputs.sources.append(reference)
        }
        return inputs
    }
}
