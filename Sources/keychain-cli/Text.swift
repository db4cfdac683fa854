extension Substring {
    /// Without leading and trailing whitespace (Foundation's trimmingCharacters, without Foundation).
    func trimmingSpaces() -> Substring {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else { return self[endIndex...] }
        return self[first...last]
    }
}
