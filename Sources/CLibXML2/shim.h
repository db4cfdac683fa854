#ifndef KEYCHAIN_CLI_LIBXML2_SHIM_H
#define KEYCHAIN_CLI_LIBXML2_SHIM_H

// libxml2's streaming reader, for the KeePass XML that keepassxc-cli exports (import --format
// keepassxc). Loaded on first use through CLibraryLoader, like libsecret and libgcrypt.
#include <libxml/xmlreader.h>

#endif
