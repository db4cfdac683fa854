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
    /// The environment's variables whose value is a reference (none with --no-references).
    func inheritedReferences() -> [(name: String, value: String)] {
        noReferences ? [] : Environment.variables(withValuePrefix: KeychainReference.scheme)
    }

    /// Everything the command is given, read from `keychain`.
    /// - Throws: ``CommandFailure`` naming the variable or file of the first that cannot be read
    ///   (exit as get: 1 when missing, 65 for a binary secret, …), or two that set one name.
    /// - Parameter outcome: what a failure stops (a restart: "the command keeps running").
    func inputs(from keychain: Keychain, outcome: String = "nothing was run") throws -> ExecInputs {
        var variables = try sources.parsedMappings()
        // op run's rule: a variable whose value is a reference as a whole is replaced by what it
        // names, unless a mapping sets that variable anyway.
        let mapped = Swift.Set(variables.map(\.name))
        for (name, value) in inheritedReferences() where !mapped.contains(name) {
            let origin = "$\(name)"
            let reference = try KeychainReference.parsed(value, at: origin, outcome: outcome)
            variables.append(EnvironmentMapping(name: name, value: .reference(reference), origin: origin))
        }
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
