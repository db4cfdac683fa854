import KeychainAge
import KeychainStore

extension KeychainError {
    /// The error of an age plugin's failure, in its words.
    init(_ failure: AgePlugin.Failure) {
        let problem: AgePluginProblem
        switch failure {
        case .notInPath: problem = .notInPath
        case .failed: problem = .failed
        case .timedOut: problem = .timedOut
        case .needsTerminal: problem = .needsTerminal
        }
        self = .agePlugin(plugin: failure.plugin, problem: problem, detail: failure.description)
    }
}
