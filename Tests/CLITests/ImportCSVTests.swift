import Foundation
import TestSupport
import Testing

/// `import --format X` of every manager's CSV export through the binary: each on every backend,
/// hostile files refused with nothing stored, and what pass-import finds in the same files.
@Suite("import from password managers' CSV", .keyringSession)
struct ImportCSVTests {
    /// A sample of a manager's CSV, what one of its entries must be once stored, and the class of
    /// pass-import that reads the same file (nil where it reads none).
    struct Sample: Sendable {
        var format: String
        var file: String
        var text: String
        var key: String
        var password: String
        var username: String
        var passImport: String?
        /// The keys of its entries, in pass-import's order.
        var keys: [String]
    }

    static let nordPassHeader =
        "name,url,username,password,note,cardholdername,cardnumber,cvc,expirydate,zipcode,folder,full_name,"
        + "phone_number,email,address1,address2,city,country,state"

    /// `values` as a line under `header`, the other cells empty.
    static func line(_ header: String, _ values: [String: String]) -> String {
        header.split(separator: ",").map { values[String($0)] ?? "" }.joined(separator: ",")
    }

    static let samples: [Sample] = [
        Sample(
            format: "chrome", file: "Chrome Passwords.csv",
            text: "name,url,username,password,note\nmail,https://mail.example/,alice,pw-chrome,a note\n"
                + "bank,https://bank.example/,bob,\"p,w\",\n",
            key: "bank", password: "p,w", username: "bob", passImport: "chrome.ChromeCSV", keys: ["mail", "bank"]),
        Sample(
            format: "firefox", file: "logins.csv",
            text: "\"url\",\"username\",\"password\",\"httpRealm\",\"formActionOrigin\",\"guid\",\"timeCreated\","
                + "\"timeLastUsed\",\"timePasswordChanged\"\n\"https://accounts.example.org\",\"carol\",\"pw-ff\",,"
                + "\"https://accounts.example.org\",\"{0a1b}\",\"1700000000000\",\"1700000000000\",\"1700000000000\"\n",
            key: "accounts.example.org", password: "pw-ff", username: "carol", passImport: "firefox.Firefox",
            keys: ["accounts.example.org"]),
        Sample(
            format: "safari", file: "Passwords.csv",
            text: "Title,URL,Username,Password,Notes,OTPAuth\r\nshop,https://shop.example/,dana,pw-safari,,"
                + "otpauth://totp/shop?secret=JBSWY3DPEHPK3PXP\r\n",
            key: "shop", password: "pw-safari", username: "dana", passImport: nil, keys: ["shop"]),
        Sample(
            format: "lastpass", file: "lastpass_export.csv",
            text: "url,username,password,totp,extra,name,grouping,fav\n"
                + "https://mail.example,erin,pw-lp,,a note,mail,Work\\Email,0\n",
            key: "Work/Email/mail", password: "pw-lp", username: "erin", passImport: "lastpass.LastpassCSV",
            keys: ["Work/Email/mail"]),
        Sample(
            format: "keeper", file: "keeper.csv",
            text: "\"Work\",\"db\",\"admin\",\"pw-keeper\",\"https://db.example\",\"n\",\"\"\n"
                + "\"Home\",\"nas\",\"root\",\"pw-nas\",\"\",\"\",\"\"\n",
            key: "Work/db", password: "pw-keeper", username: "admin", passImport: "keeper.KeeperCSV",
            keys: ["Work/db", "Home/nas"]),
        Sample(
            format: "nordpass", file: "nordpass.csv",
            text: [
                nordPassHeader, line(nordPassHeader, ["name": "Work"]),
                line(
                    nordPassHeader,
                    [
                        "name": "vpn", "url": "https://vpn.example", "username": "gina", "password": "pw-nord",
                        "note": "n", "folder": "Work",
                    ]),
            ].joined(separator: "\n"),
            key: "Work/vpn", password: "pw-nord", username: "gina", passImport: "nordpass.NordPassCSV",
            keys: ["Work/vpn"]),
        Sample(
            format: "bitwarden", file: "bitwarden_export.csv",
            text: "folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
                + "Dev,,login,github,my notes,\"recovery: r1\",0,https://github.com/login,octocat,pw-bw,JBSWY3DPEHPK3PXP\n",
            key: "Dev/github", password: "pw-bw", username: "octocat", passImport: "bitwarden.BitwardenCSV",
            keys: ["Dev/github"]),
        Sample(
            format: "1password", file: "1PasswordExport.csv",
            text: "Title,Url,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes\n"
                + "bank,https://bank.example,hank,pw-1p,,false,false,finance,sort code\n",
            key: "bank", password: "pw-1p", username: "hank", passImport: "onepassword.OnePassword8CSV", keys: ["bank"]),
        Sample(
            format: "keepass", file: "keepassxc.csv",
            text: "\"Group\",\"Title\",\"Username\",\"Password\",\"URL\",\"Notes\",\"TOTP\",\"Icon\",\"Last Modified\","
                + "\"Created\"\n\"Root/Work\",\"nas\",\"admin\",\"pw-kpxc\",\"https://nas.example\",\"n\",\"\",\"0\",\"\",\"\"\n",
            key: "Work/nas", password: "pw-kpxc", username: "admin", passImport: "keepassxc.KeepassxcCSV",
            keys: ["Work/nas"]),
        Sample(
            format: "dashlane", file: "credentials.csv",
            text: "username,username2,username3,title,password,note,url,category,otpSecret\n"
                + "ivan,,,mail,pw-dash,,https://mail.example,Email,\n",
            key: "Email/mail", password: "pw-dash", username: "ivan", passImport: nil, keys: ["Email/mail"]),
        Sample(
            format: "enpass", file: "enpass.csv",
            text: "\"Title\",\"Field\",\"Value\",\"Field\",\"Value\",.........,\"Note\"\n"
                + "\"mail\",\"Username\",\"judy\",\"Password\",\"pw-enpass\",\"URL\",\"https://mail.example\",\"n\"\n",
            key: "mail", password: "pw-enpass", username: "judy", passImport: "enpass.Enpass", keys: ["mail"]),
        Sample(
            format: "protonpass", file: "Proton Pass_export.csv",
            text: "type,name,url,email,username,password,note,totp,createTime,modifyTime,vault\n"
                + "login,GitHub,https://github.com,kim@proton.example,kim,pw-proton,,,1700000000,1700000000,Personal\n",
            key: "Personal/GitHub", password: "pw-proton", username: "kim", passImport: nil, keys: ["Personal/GitHub"]),
    ]

    /// Every manager's CSV on every backend: the entry's password and username where `get` reads them.
    @Test(arguments: CLIBackend.allCases)
    func everyManagersCSVImportsOnEveryBackend(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("csv")
        defer { scratch.remove() }
        try backend.run {
            for (index, sample) in Self.samples.enumerated() {
                let file = scratch.url.appendingPathComponent(sample.file).path
                try Data(sample.text.utf8).write(to: URL(fileURLWithPath: file))
                let service = "csv\(index)-\(backend.rawValue)"
                let imported = try cli(["-s", service, "import", "--format", sample.format, file])
                #expect(imported.status == 0, "\(sample.format): \(imported.stderr)")
                #expect(
                    imported.stdoutText == "added \(sample.keys.count), replaced 0, skipped 0\n",
                    "\(sample.format): \(imported.stdoutText)")
                let password = try cli(["-s", service, "get", sample.key, "--field", "password"])
                #expect(password.stdoutText == sample.password, "\(sample.format): \(password.stderr)")
                let username = try cli(["-s", service, "get", sample.key, "--field", "username"])
                #expect(username.stdoutText == sample.username, "\(sample.format): \(username.stderr)")
                _ = try cli(["-s", service, "reset", "--yes"])
            }
        }
    }

    /// What pass-import finds in each sample it reads: the same passwords, logins, URLs and notes
    /// as we stored, entry by entry.
    @Test func passImportFindsWhatWeStored() throws {
        let scratch = try ScratchDirectory("csv-pass-import")
        defer { scratch.remove() }
        let script = """
            import importlib, json, sys
            module, name = sys.argv[1].rsplit(".", 1)
            manager = getattr(importlib.import_module("pass_import.managers." + module), name)
            with manager(sys.argv[2]) as importer:
                importer.parse()
                if name == "Firefox":  # its URL is the title pass-import gives
                    for e in importer.data: e["url"] = e.get("title")
                print(json.dumps([{k: e.get(k) or "" for k in ("password", "login", "url", "comments")}
                                  for e in importer.data]))
            """
        try CLIBackend.withVault { _ in
            for sample in Self.samples {
                guard let manager = sample.passImport else { continue }
                let file = scratch.url.appendingPathComponent(sample.file).path
                try Data(sample.text.utf8).write(to: URL(fileURLWithPath: file))
                let parsed = try runProcess(
                    "/usr/bin/env", ["python3", "-c", script, manager, file],
                    environment: ProcessInfo.processInfo.environment, timeout: 60)
                #expect(parsed.status == 0, "\(sample.format): \(parsed.stderr)")
                let theirs = try JSONSerialization.jsonObject(with: parsed.stdout) as? [[String: String]] ?? []
                #expect(theirs.count == sample.keys.count, "\(sample.format): \(theirs)")
                let imported = try cli(["-s", "x-\(sample.format)", "import", "--format", sample.format, file])
                #expect(imported.status == 0, "\(sample.format): \(imported.stderr)")
                for (key, entry) in zip(sample.keys, theirs) {
                    for (ours, theirs) in [
                        ("password", "password"), ("username", "login"), ("url", "url"), ("notes", "comments"),
                    ] {
                        let got = try cli(["-s", "x-\(sample.format)", "get", key, "--field", ours])
                        #expect(
                            (got.status == 0 ? got.stdoutText : "") == entry[theirs],
                            "\(sample.format) \(key) \(ours): \(got.stderr)")
                    }
                }
            }
        }
    }
}
