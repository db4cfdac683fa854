#ifndef KEYCHAIN_CLI_LIBGCRYPT_SHIM_H
#define KEYCHAIN_CLI_LIBGCRYPT_SHIM_H

// libgcrypt's multi-precision integers, for the Diffie-Hellman exchange of the Secret Service's
// encrypted session (SecretSession.swift). libsecret links the same library for the same exchange.
#include <gcrypt.h>

#endif
