// KeychainCore is the product library users import: the facade, the seam, the three backends, the
// formats and the new-secret helpers, each a target of its own (docs/development.md draws the map).
// The GLib support and the encrypted session stay out of sight: they are the backends' plumbing.
@_exported import KeychainAge
@_exported import KeychainCredentials
@_exported import KeychainFacade
@_exported import KeychainFormats
@_exported import KeychainKeePass
@_exported import KeychainManagers
@_exported import KeychainOpenBao
@_exported import KeychainProvider
@_exported import KeychainSecretService
@_exported import KeychainSecrets
@_exported import KeychainStore
@_exported import KeychainSystem
@_exported import KeychainVault
