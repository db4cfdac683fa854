/// Environment variables that change which program runs, what it loads or which configuration
/// and commands it reads: a key named `git-external-diff`, `ld-preload` or `bash-env` must not
/// become one of them because somebody could add it to a service. Every place that turns key
/// names into variable names (`exec --from`, `export --format env`, `github-env`, `docker`) asks
/// ``changesWhatRuns(_:)``; only an explicit mapping (`exec --env NAME=KEY`) sets one.
///
/// Built from the documentation of what reads them (docs/security.md says how): the shells'
/// variables (bash(1), dash(1), zsh's and ksh's start-up files), the dynamic loader's and glibc's
/// (ld.so(8): LD_*, and the variables it drops for set-user-ID programs), git's (git(1): every
/// GIT_ variable, which name directories, configuration, programs and trace files), ssh's and
/// sudo's helpers, less(1)'s, editors and pagers, the JVM's, Python's (python3(1): every PYTHON
/// variable), Node's and npm's, Ruby's, Perl's (perlrun), Go's and Cargo's, make's, OpenSSL's and
/// the XDG base directories (where programs find their configuration), and keychain-cli's own.
package enum ProgramVariables {
    /// The names, exactly.
    package static let names: Set<String> = [
        // Shells: what they run at start, search, split, expand in prompts and traces.
        "PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS0", "PS1", "PS2", "PS3", "PS4",
        "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "EXECIGNORE", "HOME", "SHELL", "_", "ZDOTDIR", "FPATH",
        "FCEDIT", "INPUTRC", "HISTFILE", "MAILPATH", "BASH_XTRACEFD", "BASH_LOADABLES_PATH", "BASH_COMPAT",
        "POSIXLY_CORRECT", "TMOUT",
        // zsh's other names for the prompts (expanded with prompt_subst, which oh-my-zsh sets)
        // and the commands it runs for a redirection alone (an attack found them missing).
        "PROMPT", "PROMPT2", "PROMPT3", "PROMPT4", "RPROMPT", "RPROMPT2", "RPS1", "RPS2", "SPROMPT", "NULLCMD",
        "READNULLCMD", "POSTEDIT", "TMPPREFIX",
        // The dynamic loader and glibc (besides LD_*): what ld.so drops for set-user-ID programs.
        "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
        "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR",
        // ssh, sudo: the programs they run to ask, and the agent they trust.
        "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "SSH_AUTH_SOCK", "SUDO_ASKPASS", "SUDO_EDITOR",
        // Editors, pagers, browsers, and less's input filters, keys and options (LESS='+!cmd').
        "EDITOR", "VISUAL", "PAGER", "MANPAGER", "MANOPT", "SYSTEMD_PAGER", "SYSTEMD_EDITOR", "BROWSER", "LESS",
        "LESSOPEN", "LESSCLOSE", "LESSEDIT", "LESSKEY", "LESSKEYIN", "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM",
        "LESSSECURE", "LESS_IS_MORE", "TERMINFO", "TERMINFO_DIRS",
        // JVMs and the scripts that start them (-javaagent).
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS", "JAVA_HOME", "CLASSPATH",
        "GRADLE_OPTS", "MAVEN_OPTS",
        // Ruby, Go, Rust, make, OpenSSL's engines and providers.
        "RUBYOPT", "RUBYLIB", "RUBYSHELL", "GEM_HOME", "GEM_PATH", "BUNDLE_GEMFILE", "GOFLAGS", "GOENV",
        "GOROOT", "GOTOOLCHAIN", "GOPROXY", "GOCACHEPROG", "GOEXPERIMENT", "RUSTC", "RUSTC_WRAPPER",
        "RUSTFLAGS", "RUSTDOCFLAGS", "MAKEFILES", "MAKEFLAGS", "MFLAGS", "OPENSSL_CONF", "OPENSSL_ENGINES",
        "OPENSSL_MODULES",
        // Editors' and interpreters' start-up commands (vim runs $VIMINIT as Ex commands).
        "VIMINIT", "EXINIT", "GVIMINIT", "MYVIMRC", "MYGVIMRC", "VIMRUNTIME", "EMACSLOADPATH", "LUA_INIT",
        "LUA_PATH", "LUA_CPATH", "PHPRC", "PHP_INI_SCAN_DIR", "TCLLIBPATH", "R_PROFILE", "R_PROFILE_USER",
        "R_ENVIRON", "R_ENVIRON_USER",
        // Configuration files and plug-ins that run programs: kubectl's and AWS's credential
        // commands, the C compiler make and build scripts call, Mercurial's hooks, GTK's and Qt's
        // modules, docker's credential helpers, curl's and wget's configuration (the same attack).
        "KUBECONFIG", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "CC", "CXX", "CPP", "LD", "AR",
        "HGRCPATH", "GTK_MODULES", "GTK_PATH", "QT_PLUGIN_PATH", "QT_QPA_PLATFORM_PLUGIN_PATH", "DOCKER_CONFIG",
        "DOCKER_HOST", "CURL_HOME", "WGETRC", "GNUPGHOME",
        // GitHub's runner: the files a step writes the job's variables and outputs to, and the
        // addresses its token is sent to (GITHUB_TOKEN itself is a secret like any other).
        "GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE",
        "GITHUB_EVENT_PATH", "GITHUB_ACTION_PATH", "GITHUB_API_URL", "GITHUB_SERVER_URL", "GITHUB_GRAPHQL_URL",
        // keychain-cli's backends: a token or address of the key writer's choice.
        "BAO_TOKEN", "VAULT_TOKEN", "BAO_ADDR", "VAULT_ADDR", "CREDENTIALS_DIRECTORY",
    ]

    /// The beginnings: families whose members all change what runs or is loaded.
    package static let prefixes = [
        "LD_", "DYLD_", "BASH_FUNC_", "GIT_", "PYTHON", "NODE_", "NPM_CONFIG_", "PERL", "CARGO_", "CGO_",
        "KEYCHAIN_", "XDG_", "LUA_INIT_",
        // GitHub's runner: ACTIONS_ALLOW_UNSECURE_COMMANDS=true brings ::set-env and ::add-path::
        // back (CVE-2020-15228), ACTIONS_* and RUNNER_* steer it.
        "ACTIONS_", "RUNNER_",
    ]

    /// Whether the variable `name` is one of them, in any case: npm reads `npm_config_*` in any,
    /// and zsh ties `path` to `PATH`.
    package static func changesWhatRuns(_ name: String) -> Bool {
        let upper = name.uppercased()
        return names.contains(upper) || prefixes.contains { upper.hasPrefix($0) }
    }

    /// The first of `variables` that sets one of them, with its key: what a refusal names.
    package static func first(in variables: [(name: String, key: String, value: String)]) -> (
        name: String, key: String
    )? {
        variables.first { changesWhatRuns($0.name) }.map { ($0.name, $0.key) }
    }
}
