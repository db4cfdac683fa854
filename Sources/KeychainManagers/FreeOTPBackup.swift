import KeychainFormats
import KeychainSystem

/// FreeOTP+'s JSON export (helloworld1/FreeOTPPlus: token-data's legacy Token and SavedTokens,
/// written by Gson): `{"tokens": [{"algo", "counter", "digits", "issuerExt", "issuerInt",
/// "issuerAlt", "label", "labelAlt", "image", "period", "secret", "type"}], "tokenOrder": […]}`,
/// the secret a list of signed bytes. Its issuer is `issuerAlt`, else `issuerExt`, else
/// `issuerInt`; its account `labelAlt`, else `label` (Token.getIssuer, getLabel); a TOTP whose
/// issuer is `Steam` gives Steam's codes (TokenCodeUtil).
enum FreeOTPBackup {
    static let app = "FreeOTP+"

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        let source = input.source
        let text = try OTPJSON.text(input.bytes, source: source)
        let document = try JSONMembers(
            OTPJSON.value(text, source: source, app: app), location: source, app: app, what: "a FreeOTP+ export")
        guard let tokens = try document.array("tokens") else {
            throw FormatError(
                "\(source) is not FreeOTP+'s JSON export: it has no list of tokens; nothing was stored. Choose "
                    + "another --format if another app wrote it")
        }
        _ = try document.strings("tokenOrder")
        var images = 0
        let read = try tokens.enumerated().map { index, value in
            let location = "\(source): token \(index + 1)"
            let item = try JSONMembers(value, location: location, app: app, what: "a FreeOTP+ token")
            if try item.string("imageAlt") ?? item.string("image") != nil { images += 1 }
            return try token(item, location: location)
        }
        let notImported = images == 0 ? [] : ["\(source): \(OTPExport.count(images, "image", "images")) not imported"]
        return OTPExport.export(read, source: source, notImported: notImported)
    }

    private static func token(_ item: JSONMembers, location: String) throws -> OTPToken {
        guard let values = try item.array("secret") else { throw item.missing("secret") }
        let secret = try values.map { value in
            guard let number = value.double, number == number.rounded(), (-128...255).contains(number) else {
                throw item.wrong("secret", "a list of bytes (-128 to 127)")
            }
            return UInt8(truncatingIfNeeded: Int(number))
        }
        let issuers = [try item.string("issuerAlt"), try item.string("issuerExt"), try item.string("issuerInt")]
        let issuer = issuers.compactMap { $0 }.first { !$0.isEmpty } ?? ""
        let account = try item.string("labelAlt") ?? item.string("label") ?? ""
        let type = try item.requiredString("type").uppercased()
        let algorithm = OTPToken.algorithmName(try item.string("algo") ?? "SHA1")
        let digits = Int(try item.requiredInteger("digits", in: 1...10))
        var token = OTPToken(issuer: issuer, account: account, code: .other(kind: "", text: ""))
        func uri(_ type: String, _ parameters: [(String, String)]) -> String {
            OTPToken.uri(
                type, issuer: issuer, account: account, secret: secret,
                [("algorithm", algorithm), ("digits", String(digits))] + parameters)
        }
        switch type {
        case "TOTP":
            let period = Int(try item.requiredInteger("period", in: 1...Int64(Int32.max / 1000)))
            if issuer == "Steam" {
                // KeePassXC's way of saying so, which `otp` knows is no TOTP it computes.
                token.code = .other(
                    kind: "Steam", text: uri("totp", [("period", String(period)), ("encoder", "steam")]))
            } else {
                token.code = .totp(secret: secret, algorithm: algorithm, digits: digits, period: period)
            }
        case "HOTP":
            // Gson writes the counter of the last code; FreeOTP+'s own URI says the next one.
            let counter = try item.requiredInteger("counter", in: -1...9_007_199_254_740_992)
            token.code = .other(kind: "HOTP", text: uri("hotp", [("counter", String(counter + 1))]))
        default:
            throw FormatError(
                "\(location) is a token of the type \(quotedValue(type, expected: "a token type")), which FreeOTP+ "
                    + "does not write (TOTP, HOTP); nothing was stored")
        }
        return token
    }
}
