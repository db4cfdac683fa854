#ifndef KEYCHAIN_CLI_LIBRARY_LOADER_H
#define KEYCHAIN_CLI_LIBRARY_LOADER_H

// Nothing to call: linking this target gives every function of symbols.h a stand-in that loads
// its library on first use (library_loader.c).

#endif
