import FoundationEssentials

// The versions and dates of KV version 2 secrets, as OpenBao answers them.
extension OpenBaoStore {
    /// A version's metadata as OpenBao answers it: `{"version": N, "created_time": "…"}`.
    struct VersionMetadata: Decodable {
        var version: Int?
        var createdTime: String?
        enum CodingKeys: String, CodingKey {
            case version
            case createdTime = "created_time"
        }
    }

    /// A version a write made: its number and when it was written, as the server answered.
    struct KVVersion {
        var number: Int
        var created: Date?

        init(number: Int, created: Date?) {
            self.number = number
            self.created = created
        }

        /// From the answer to a write: `{"data": {"version": N, "created_time": "…"}}`.
        init(_ response: HTTPResponse) {
            struct Answer: Decodable { var data: VersionMetadata? }
            let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body))
            self.init(number: answer?.data?.version ?? 0, created: answer?.data?.createdTime.flatMap(parseRFC3339))
        }
    }
}

/// An RFC 3339 time as OpenBao writes it (`2026-11-23T01:31:50.923635107Z`), in UTC.
func parseRFC3339(_ text: String) -> Date? {
    let scalars = Array(text.utf8)
    guard scalars.count >= 20, scalars[4] == UInt8(ascii: "-"), scalars[10] == UInt8(ascii: "T") else { return nil }
    func number(_ range: Range<Int>) -> Int? { Int(String(decoding: scalars[range], as: UTF8.self)) }
    guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
        let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
        (1...12).contains(month)
    else { return nil }
    var fraction = 0.0
    var index = 19
    if scalars[index] == UInt8(ascii: ".") {
        var scale = 0.1
        index += 1
        while index < scalars.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(scalars[index]) {
            fraction += Double(scalars[index] - UInt8(ascii: "0")) * scale
            scale /= 10
            index += 1
        }
    }
    guard index < scalars.count, scalars[index] == UInt8(ascii: "Z") else { return nil }
    // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let days = era * 146_097 + dayOfEra - 719_468
    let seconds = Double(days * 86_400 + hour * 3_600 + minute * 60 + second) + fraction
    return Date(timeIntervalSince1970: seconds)
}
