extension StringProtocol {
    /// Whether `part` occurs in this text, compared byte for byte in UTF-8.
    ///
    /// Not the standard library's `contains(_:)` for strings: that one lives in
    /// _StringProcessing, and calling it links the whole regex engine into the helper
    /// (800 KB of code, a fifth of its protocol conformances, which the runtime scans at
    /// every first dynamic cast).
    public func includes(_ part: some StringProtocol) -> Bool {
        let text = Array(utf8), needle = Array(part.utf8)
        guard let first = needle.first else { return true }
        guard text.count >= needle.count else { return false }
        for start in 0...(text.count - needle.count) where text[start] == first {
            if text[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}
