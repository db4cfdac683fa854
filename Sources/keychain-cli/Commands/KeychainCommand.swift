import ArgumentParser
import KeychainCore

/// What a subcommand needs from the global options, whether given to it or to the root command.
protocol KeychainCommand: ParsableCommand {
    var globals: GlobalOptions { get }
    var root: KeychainCLI { get }
}

extension KeychainCommand {
    /// The settings of this invocation: options given after the command name win over those before.
    var settings: Settings { globals.over(root.globals) }

    /// ``settings`` for a credential helper, which never asks for the vault's passphrase.
    var helperSettings: Settings {
        var settings = settings
        settings.mayPrompt = false
        return settings
    }

    /// The keychain of the chosen service on the chosen backend.
    func keychain(listing: ListingDetail = .full) throws -> Keychain {
        try settings.keychain(listing: listing)
    }
}

/// A command group run without a command: its help on standard error, and a usage error (64)
/// naming the commands, with a word on combined short options (`-ss` is `-s -s`).
func missingCommand(_ command: any ParsableCommand.Type, arguments: [String]) -> CommandFailure {
    writeError(command.helpMessage(columns: 80) + "\n")
    let combined = arguments.first { $0.count > 2 && $0.hasPrefix("-") && !$0.hasPrefix("--") }
    let hint = combined.map {
        " ('\(escapedForDisplay($0))' is read as \($0.dropFirst().map { "-\($0)" }.joined(separator: " ")), "
            + "each taking the next word as its value: write -s NAME, with a space)"
    }
    let names = command.configuration.subcommands.map(commandName)
    let path = command == KeychainCLI.self ? "keychain-cli" : "keychain-cli \(commandName(command))"
    return CommandFailure.usage(
        "no command given\(hint ?? ""). The commands are \(names.joined(separator: ", ")); see '\(path) --help'")
}

/// A command's name as argument-parser documents it: its configuration's `commandName`, else its
/// type's name in hyphen-separated lowercase words (`DockerCredential` is `docker-credential`).
func commandName(_ command: any ParsableCommand.Type) -> String {
    if let name = command.configuration.commandName { return name }
    var name = ""
    var afterLowercase = false
    for character in String(describing: command) {
        if character.isUppercase && afterLowercase { name += "-" }
        afterLowercase = character.isLowercase || character.isNumber
        name += character.lowercased()
    }
    return name
}
