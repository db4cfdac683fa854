#ifndef KEYCHAIN_CLI_LIBGCRYPT_SHIM_H
#define KEYCHAIN_CLI_LIBGCRYPT_SHIM_H

// libgcrypt's multi-precision integers, HMAC and AES, for the Secret Service's encrypted session
// (SecretSession.swift). libsecret links the same library for the same session.
#include <gcrypt.h>

#endif
